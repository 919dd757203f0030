"""The fast engine (numpy by hand) must equal the autograd engine (torch)."""

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitlab import Config, train
from fitlab.engines.numpy_run import train_numpy

CONFIGS = [
    dict(),
    dict(seed=1, width=7),
    dict(seed=7, shared_repeats=0),
    dict(seed=3, shared_repeats=4, width=3),
    dict(seed=11, batch_size=7, n_train=40, epochs=30),   # partial last batch
    dict(seed=5, batch_size=1, n_train=12, epochs=10),
    dict(seed=2, lr=0.05, in_features=4, n_samples=60, n_train=33, batch_size=8, epochs=40),
    dict(tied=False),
    dict(seed=4, tied=False, shared_repeats=3, width=6, batch_size=3, n_train=20, epochs=25),
    dict(seed=9, tied=False, shared_repeats=0, epochs=20),
    dict(seed=6, width=64, epochs=20),
    dict(seed=8, width=1, epochs=30),
    dict(seed=10, n_train=1, batch_size=1, n_samples=2, epochs=15),
]


def assert_same_run(fast, autograd):
    assert fast.engine == "fast" and autograd.engine == "autograd"
    assert fast.error is None and autograd.error is None
    assert list(fast.history.epoch) == list(autograd.history.epoch)
    for column in ("train_loss", "test_loss"):
        for a, b in zip(fast.history[column], autograd.history[column]):
            assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-7), (column, a, b)
    assert fast.teacher_params.equals(autograd.teacher_params)
    assert list(fast.student_params.parameter) == list(autograd.student_params.parameter)
    assert np.allclose(fast.student_params.value, autograd.student_params.value, rtol=1e-4, atol=1e-6)
    assert math.isclose(fast.blog_test_loss, autograd.blog_test_loss, rel_tol=1e-4, abs_tol=1e-7)


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@pytest.mark.parametrize("overrides", CONFIGS,
                         ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "default")
def test_fast_engine_equals_autograd(overrides, trained):
    config = Config(**overrides)
    assert_same_run(trained(config), trained(replace(config, engine="autograd")))


# Derandomized: the same drawn configs on every machine. Both engines round
# in float32, in different orders, and training amplifies the difference;
# rare ill-conditioned configs (found: width 11, untied, 5 training rows,
# seed 747) drift just past 1e-4 relative, as torch's own float32 run
# drifts from float64. A suite that passes or fails by the luck of the draw
# tells nobody anything.
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(1, 12), repeats=st.integers(0, 4), tied=st.booleans(),
       n_train=st.integers(1, 30), batch=st.integers(1, 30), seed=st.integers(0, 2**32 - 1),
       lr=st.sampled_from([0.001, 0.01, 0.03]))
def test_fast_engine_equals_autograd_on_drawn_configs(width, repeats, tied, n_train, batch, seed, lr):
    config = Config(width=width, shared_repeats=repeats, tied=tied, n_train=n_train,
                    batch_size=min(batch, n_train), seed=seed, lr=lr, epochs=8, n_samples=40)
    assert_same_run(train(config), train(replace(config, engine="autograd")))


def test_engine_defaults_to_fast_and_undetached_labels_run_autograd():
    assert Config().engine == "fast" and train(Config(epochs=1)).engine == "fast"
    failed = train(Config(detach=False))
    assert failed.engine == "autograd" and failed.error is not None
    assert "is at version 2; expected version 1" in failed.error.message
    assert Config(detach=False).runs_engine == "autograd"
    assert Config(engine="autograd").runs_engine == "autograd"


def test_fast_engine_refuses_attached_labels():
    with pytest.raises(ValueError, match="detach=False"):
        train_numpy(Config(detach=False))


@pytest.mark.parametrize("engine", ["torch", "", None, 1])
def test_engine_is_validated(engine):
    with pytest.raises(ValueError, match="^engine="):
        Config(engine=engine)


@pytest.mark.parametrize("overrides", [dict(), dict(tied=False, shared_repeats=3, width=4),
                                       dict(shared_repeats=0, batch_size=7, epochs=40)], ids=str)
def test_engines_agree_on_the_student_versus_teacher_records(overrides, trained):
    fast = trained(Config(engine="fast", **overrides))
    slow = trained(Config(engine="autograd", **overrides))
    for field in ("distances", "test_predictions", "loss_slices"):
        a, b = getattr(fast, field), getattr(slow, field)
        assert list(a.columns) == list(b.columns) and len(a) == len(b) > 0
        for column in a.columns:
            if a[column].dtype.kind == "f":
                np.testing.assert_allclose(a[column], b[column], rtol=1e-4, atol=1e-6)
            else:
                assert a[column].tolist() == b[column].tolist()


def test_a_diverging_fast_run_is_a_result_without_warnings():
    config = Config(lr=10.0, epochs=30, width=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = train(config)
    assert run.error is None and not np.isfinite(run.history.train_loss.iloc[-1])
    autograd = train(replace(config, engine="autograd"))
    assert not np.isfinite(autograd.history.train_loss.iloc[-1])


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
def test_a_long_sensitive_run_drifts_between_the_engines_and_comes_back():
    # docs/library.md: no 1e-4 bound on every loss of a long run (0.7 % near
    # epoch 624 here), but the final losses agree to it.
    config = Config(width=8, lr=0.2, epochs=1000)
    fast, autograd = train(config).history, train(replace(config, engine="autograd")).history
    for column in ("train_loss", "test_loss"):
        a, b = fast[column].to_numpy(), autograd[column].to_numpy()
        relative = np.abs(a - b) / np.abs(b)
        assert relative.max() < 1e-2, column
        assert relative[-1] < 1e-4, column


@pytest.mark.parametrize("engine", ["fast", "autograd"])
def test_a_diverging_run_stops_at_the_epoch_it_diverged(engine):
    # Width 256, one row per batch: NaN from epoch 1 (issue 32 saw it train on to epoch 348 of 1200).
    run = train(Config(width=256, epochs=1200, batch_size=1, seed=5, engine=engine))
    assert run.diverged_at == 1 and list(run.history.epoch) == [0, 1]
    assert list(run.frames.epochs) == [0, 1]   # the diverged student is its last frame
    assert not np.isfinite(run.frames.values[-1]).all()
    # One that diverges later keeps every finite epoch before it.
    later = train(Config(lr=2.0, epochs=200, engine=engine))
    assert later.diverged_at is not None and later.diverged_at > 1
    assert len(later.history) == later.diverged_at + 1
    assert np.isfinite(later.history.train_loss.iloc[:-1]).all()
