"""Matching hidden units is exact where fitlab says so: checked against a
brute force over every permutation, with an independent distance."""

import itertools

import numpy as np
import pytest

from fitlab import Config, train
from fitlab.student.matching import HiddenUnits
from fitlab.weights import teacher_as_student


def distance(student, teacher):
    """Whole-net Euclidean distance over (weight, bias), in float64."""
    return float(np.sqrt(sum(np.sum((w.astype(np.float64) - tw) ** 2) + np.sum((b.astype(np.float64) - tb) ** 2)
                             for (_, w, b), (_, tw, tb) in zip(student, teacher))))


def brute_force(units, student, teacher, width):
    every = [np.array(p) for p in itertools.permutations(range(width))]
    return min(distance(units.apply(student, list(perms)), teacher)
               for perms in itertools.product(every, repeat=units.n_perms))


def final_student(config):
    run = train(config)
    st = run.student_teacher
    units = HiddenUnits(len(st.final), config.shared_repeats)
    return run, units, st.final, teacher_as_student(st.teacher, len(st.final))


def test_at_the_defaults_matching_finds_the_issues_relabelling_not_the_identity():
    run, units, student, teacher = final_student(Config())
    perms = units.match(student, teacher)
    assert [tuple(int(i) for i in p) for p in perms] == [(3, 1, 0, 4, 2)]
    assert distance(units.apply(student, perms), teacher) ** 2 == pytest.approx(17.53, abs=0.005)
    assert distance(student, teacher) ** 2 == pytest.approx(18.54, abs=0.005)
    assert distance(units.apply(student, perms), teacher) == pytest.approx(
        brute_force(units, student, teacher, 5), rel=1e-9)
    # The run's own table reports that matched distance, and calls it exact.
    last = run.distances[run.distances.epoch == run.config.epochs]
    assert np.sqrt((last.matched ** 2).sum()) == pytest.approx(distance(units.apply(student, perms), teacher),
                                                               rel=1e-5)
    assert run.student_teacher.records.exact


# Shapes whose brute force stays under ~15 000 relabellings.
@pytest.mark.parametrize("overrides", [
    dict(width=5, seed=1), dict(width=6, seed=2), dict(width=3, shared_repeats=8, seed=4),
    dict(width=5, shared_repeats=1, seed=5), dict(width=5, shared_repeats=0, seed=6),
    dict(width=4, tied=False, seed=7), dict(width=3, tied=False, shared_repeats=3, seed=8),
    dict(width=5, lr=0.3, seed=9),
])
@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
def test_matched_distance_equals_the_brute_force_minimum(overrides):
    config = Config(epochs=20, **overrides)
    _, units, student, teacher = final_student(config)
    assert units.exact(config.width)
    found = distance(units.apply(student, units.match(student, teacher)), teacher)
    assert found == pytest.approx(brute_force(units, student, teacher, config.width), rel=1e-9)


@pytest.mark.parametrize("repeats,n_layers,widest", [
    (2, 3, 8), (8, 3, 8), (1, 3, 7), (0, 2, 256), (2, 4, 7), (3, 5, 5), (4, 6, 5), (5, 7, 4), (6, 8, 4),
    (7, 9, 3), (8, 10, 3)])
def test_exact_search_reaches_width_8_for_the_tied_net_and_less_for_more_free_permutations(
        repeats, n_layers, widest):
    units = HiddenUnits(n_layers, repeats)
    assert units.exact(widest) and (widest == 256 or not units.exact(widest + 1))


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
def test_at_width_8_the_one_shared_permutation_is_searched_exhaustively():
    # A random student (no training to help): the heuristic's answer is
    # beaten or matched by the search, and the search equals the brute force.
    rng = np.random.default_rng(0)
    config = Config(width=8, epochs=1)
    _, units, _, teacher = final_student(config)
    student = [(n, rng.normal(size=w.shape).astype(np.float32), rng.normal(size=b.shape).astype(np.float32))
               for n, w, b in teacher]
    found = distance(units.apply(student, units.match(student, teacher)), teacher)
    assert found == pytest.approx(brute_force(units, student, teacher, 8), rel=1e-9)


def test_beyond_the_exact_widths_the_table_says_upper_bound():
    run = train(Config(width=9, epochs=3))
    assert not run.student_teacher.records.exact
    matched = run.distances.dropna(subset=["matched"])
    assert ((matched.groupby("epoch").matched.apply(lambda m: (m ** 2).sum()))
            <= matched.groupby("epoch").raw.apply(lambda r: (r ** 2).sum()) + 1e-9).all()


def test_beyond_the_budget_weight_matching_is_an_upper_bound_of_the_search(monkeypatch):
    import fitlab.student.matching as matching

    config = Config(width=9, epochs=20, seed=2)
    _, units, student, teacher = final_student(config)
    assert not units.exact(9)
    heuristic = distance(units.apply(student, units.match(student, teacher)), teacher)
    monkeypatch.setattr(matching, "EXACT_WORK", 10**12)   # the search, run where it is too costly
    assert units.exact(9)
    searched = distance(units.apply(student, units.match(student, teacher)), teacher)
    assert searched <= heuristic + 1e-9 and heuristic <= distance(student, teacher) + 1e-9
