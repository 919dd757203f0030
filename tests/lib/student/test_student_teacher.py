"""Student versus teacher: distances with unit matching, the loss slice to the
teacher, and the final predictions, on known cases and on real runs."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch

from fitlab import Config, train
from fitlab.model import build_teacher
from fitlab.serving.cache import run_nbytes
from fitlab.student.distance import (
    DistanceTracker,
    HiddenUnits,
    layer_distances,
    recorded_epochs,
)
from fitlab.student.landscape import loss_along_line
from fitlab.weights import forward, mean_squared_error, teacher_as_student, use_order


def teacher_layers(width=6, repeats=2, seed=0):
    config = Config(width=width, shared_repeats=repeats, seed=seed)
    return build_teacher(config, torch.Generator().manual_seed(seed)).layer_arrays()


def random_perms(units, width, seed):
    rng = np.random.default_rng(seed)
    return [rng.permutation(width) for _ in range(units.n_perms)]


# (repeats, student layers): tied nets list the shared layer once, untied one copy per use.
SHAPES = [(2, 3), (0, 2), (1, 3), (3, 5), (2, 4)]


@pytest.mark.parametrize("repeats,n_layers", SHAPES)
def test_a_permuted_teacher_computes_the_same_function(repeats, n_layers):
    teacher = teacher_as_student(teacher_layers(repeats=repeats), n_layers)
    units = HiddenUnits(n_layers, repeats)
    permuted = units.apply(teacher, random_perms(units, 6, seed=repeats))
    x = np.random.default_rng(1).normal(size=(40, 10))
    order = use_order(n_layers, repeats)
    assert np.allclose(forward(permuted, order, x), forward(teacher, order, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("repeats,n_layers", SHAPES)
def test_a_permuted_teacher_has_matched_distance_zero_and_raw_distance_above_zero(repeats, n_layers):
    teacher = teacher_layers(width=8, repeats=repeats)
    units = HiddenUnits(n_layers, repeats)
    student = units.apply(teacher_as_student(teacher, n_layers), random_perms(units, 8, seed=7))
    tracker = DistanceTracker(teacher, repeats, epochs=1)
    tracker.record(0, student)
    table = tracker.records().table()
    assert table.raw.sum() > 0.1
    assert np.allclose(table.matched, 0, atol=1e-6)


def test_tied_repeats_share_one_permutation_and_untied_copies_do_not():
    assert HiddenUnits(3, 2).n_perms == 1          # P S Pᵀ at every use
    assert HiddenUnits(3, 1).n_perms == 2          # used once: input and output free
    assert HiddenUnits(2, 0).n_perms == 1
    assert HiddenUnits(5, 3).n_perms == 4          # untied: one per activation


@pytest.mark.parametrize("repeats,n_layers", SHAPES)
def test_matching_never_increases_the_whole_net_distance(repeats, n_layers):
    teacher = teacher_layers(width=7, repeats=repeats, seed=3)
    rng = np.random.default_rng(repeats)
    student = [(n, rng.normal(size=w.shape).astype(np.float32), rng.normal(size=b.shape).astype(np.float32))
               for n, w, b in teacher_as_student(teacher, n_layers)]
    tracker = DistanceTracker(teacher, repeats, epochs=1)
    tracker.record(0, student)
    table = tracker.records().table()
    assert (table.matched ** 2).sum() <= (table.raw ** 2).sum() + 1e-9


def test_recorded_epochs_are_bounded_and_include_both_ends():
    assert recorded_epochs(100) == list(range(101))
    long = recorded_epochs(2000)
    assert len(long) <= 101 and long[0] == 0 and long[-1] == 2000
    gaps = np.diff(long)
    assert gaps.max() - gaps.min() <= 1


@pytest.fixture(scope="module")
def runs():
    return {"tied": train(Config(epochs=30)), "untied": train(Config(epochs=30, tied=False))}


def distance_from_tables(run, student_layer, teacher_layer):
    def values(table, layer):
        rows = table[table.parameter.str.startswith(layer + ".")]
        return rows.value.to_numpy()
    return float(np.linalg.norm(values(run.student_params, student_layer)
                                - values(run.teacher_params, teacher_layer)))


@pytest.mark.parametrize("kind,pairs", [
    ("tied", [("first", "first"), ("shared", "shared"), ("last", "last")]),
    ("untied", [("first", "first"), ("shared copy 1", "shared"),
                ("shared copy 2", "shared"), ("last", "last")]),
])
def test_final_raw_distance_equals_the_parameter_tables(runs, kind, pairs):
    run = runs[kind]
    last = run.distances[run.distances.epoch == run.config.epochs]
    assert list(last.layer) == [student for student, _ in pairs]
    for (student, teacher), raw in zip(pairs, last.raw):
        assert raw == pytest.approx(distance_from_tables(run, student, teacher), rel=1e-5)


def test_distances_are_recorded_at_every_epoch_of_a_short_run(runs):
    run = runs["tied"]
    assert sorted(run.distances.epoch.unique()) == list(range(31))
    # The student moves: its distance to the teacher changes over training.
    first = run.distances[run.distances.layer == "first"].raw
    assert first.iloc[0] != first.iloc[-1]


def test_slice_end_points_equal_the_losses_of_its_ends(runs):
    for run in runs.values():
        slices, history = run.loss_slices, run.history
        initial = slices[slices.path == "initial student → teacher"]
        final = slices[slices.path == "final student → teacher"]
        assert initial.t.iloc[0] == 0 and initial.t.iloc[-1] == 1
        assert initial.train_loss.iloc[0] == pytest.approx(history.train_loss.iloc[0], rel=1e-5)
        assert final.train_loss.iloc[0] == pytest.approx(history.train_loss.iloc[-1], rel=1e-4)
        assert final.test_loss.iloc[0] == pytest.approx(history.test_loss.iloc[-1], rel=1e-4)
        # The labels are the teacher's outputs: zero loss at the teacher.
        assert initial.train_loss.iloc[-1] == pytest.approx(0, abs=1e-10)
        assert final.test_loss.iloc[-1] == pytest.approx(0, abs=1e-10)


def test_loss_along_line_on_known_ends():
    teacher = teacher_layers(width=4, repeats=2)
    x = np.random.default_rng(0).normal(size=(30, 10))
    labels = forward(teacher, use_order(3, 2), x)
    shifted = [(n, w + 0.5, b) for n, w, b in teacher]
    line = loss_along_line(shifted, teacher, 2, x, labels, n_train=20, n_points=11)
    start = forward(shifted, use_order(3, 2), x)
    assert line.train_loss.iloc[0] == pytest.approx(mean_squared_error(start[:20], labels[:20]))
    assert line.test_loss.iloc[0] == pytest.approx(mean_squared_error(start[20:], labels[20:]))
    assert line.train_loss.iloc[-1] == 0 and line.test_loss.iloc[-1] == 0
    assert len(line) == 11 and line.t.is_monotonic_increasing


def test_predictions_are_the_final_students_on_the_test_rows(runs):
    run = runs["tied"]
    table = run.test_predictions
    assert list(table.columns) == ["label", "prediction"] and len(table) == run.config.n_test
    mse = float(((table.label - table.prediction) ** 2).mean())
    assert mse == pytest.approx(run.history.test_loss.iloc[-1], rel=1e-4)


def test_a_diverged_run_records_without_crashing():
    run = train(Config(lr=10.0, epochs=15))
    assert run.error is None and not np.isfinite(run.history.train_loss.iloc[-1])
    last = run.distances[run.distances.epoch == 15]
    assert last.matched.isna().all()
    assert isinstance(run.loss_slices, pd.DataFrame)


def test_run_stays_picklable_and_the_cache_counts_what_it_keeps(runs):
    run = runs["untied"]
    again = pickle.loads(pickle.dumps(run))
    assert again.distances.equals(run.distances) and again.loss_slices.equals(run.loss_slices)
    tables = sum(f.memory_usage(deep=True).sum() for f in (run.history, run.teacher_params, run.student_params))
    kept = run.student_teacher
    layers = [a for ls in (kept.initial, kept.final, kept.teacher, *kept.records.kept.values())
              for _, w, b in ls for a in (w, b)]
    arrays = sum(a.nbytes for a in layers) + kept.inputs.nbytes + kept.labels.nbytes
    raw = 8 * len(kept.records.raw) * len(kept.records.names)
    frames = run.frames.values.nbytes + run.frames.epochs.nbytes
    assert run_nbytes(run) == tables + arrays + raw + frames


@pytest.mark.parametrize("engine", ["fast", "autograd"])
def test_the_student_versus_teacher_views_are_computed_on_first_use_and_once(engine):
    run = train(Config(epochs=10, engine=engine))
    views = ("distances", "test_predictions", "loss_slices")
    assert not set(views) & set(vars(run.student_teacher))   # training did not compute them
    for view in views:
        assert getattr(run, view) is getattr(run, view)


def test_layer_distances_of_identical_nets_are_zero():
    teacher = teacher_layers()
    assert layer_distances(teacher, teacher) == [0.0, 0.0, 0.0]
