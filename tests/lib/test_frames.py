"""The student's recorded frames: what both engines record, where, and how much."""

from dataclasses import replace

import numpy as np
import pytest

from fitlab import Config, train
from fitlab.blog import setup
from fitlab.frames import FRAME_BYTES, MAX_FRAMES, flatten, frame_count

CONFIGS = [dict(), dict(tied=False), dict(epochs=150, seed=3), dict(shared_repeats=0, epochs=30),
           dict(width=16, batch_size=7, epochs=40), dict(width=96, epochs=4)]


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@pytest.mark.parametrize("overrides", CONFIGS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "default")
def test_fast_and_autograd_record_the_same_frames(overrides):
    config = Config(**overrides)
    fast, autograd = train(config), train(replace(config, engine="autograd"))
    assert np.array_equal(fast.frames.epochs, autograd.frames.epochs)
    assert fast.frames.names == autograd.frames.names
    assert np.allclose(fast.frames.values, autograd.frames.values, rtol=1e-4, atol=1e-7)


def test_frames_start_at_the_fresh_student_and_end_at_the_final_one():
    config = Config()
    run = train(config)
    assert list(run.frames.epochs) == list(range(config.epochs + 1))
    assert np.array_equal(run.frames.values[0], flatten(setup(config).student.layer_arrays()))
    assert np.array_equal(run.frames.values[-1], run.student_params.value.to_numpy(np.float32))


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@pytest.mark.parametrize("engine", ["fast", "autograd"])
def test_a_frame_is_the_student_trained_for_that_many_epochs(engine):
    config = Config(epochs=150, seed=2, engine=engine)
    run = train(config)
    epochs = list(run.frames.epochs)
    assert len(epochs) == MAX_FRAMES and epochs[0] == 0 and epochs[-1] == 150
    for index in (1, 37, 99):
        shorter = train(replace(config, epochs=int(epochs[index])))
        assert np.array_equal(run.frames.values[index], shorter.student_params.value.to_numpy(np.float32))


def test_wide_nets_get_fewer_frames_within_the_budget():
    run = train(Config(width=256, epochs=60))
    n_parameters = run.frames.values.shape[1]
    assert n_parameters == 10 * 256 + 256 + 256 * 256 + 256 + 256 + 1
    assert 2 <= len(run.frames.epochs) == frame_count(n_parameters) < MAX_FRAMES
    assert run.frames.values.nbytes <= FRAME_BYTES
    assert run.frames.epochs[0] == 0 and run.frames.epochs[-1] == 60
    assert frame_count(91) == MAX_FRAMES and frame_count(10**9) == 2


def test_a_failed_run_keeps_the_frame_it_reached():
    run = train(Config(detach=False))
    assert run.error is not None
    assert list(run.frames.epochs) == [0]


def test_frames_table_is_tidy_and_lines_up_with_the_parameter_table():
    run = train(Config(epochs=20, tied=False))
    table = run.frames.table()
    assert list(table.columns) == ["epoch", "parameter", "uses", "row", "col", "value"]
    last = table[table.epoch == 20].drop(columns="epoch").reset_index(drop=True)
    assert np.array_equal(last.value.to_numpy(np.float32), run.student_params.value.to_numpy(np.float32))
    assert last[["parameter", "uses", "row", "col"]].astype(str).equals(
        run.student_params[["parameter", "uses", "row", "col"]].astype(str))
    shapes = {name: (w.shape, b.shape) for name, w, b in run.frames.layers_at(3)}
    assert shapes["shared copy 2"] == ((5, 5), (5,))
