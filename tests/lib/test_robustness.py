"""Hard to break: fuzzed Config, bounded work, divergence as a result, many
users at once, and a cache whose memory stays flat."""

import io
import os
import threading

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fitlab import BOUNDS, Config, train
from fitlab.figures.charts import loss_chart, loss_long
from fitlab.figures.tables import history_csv
from fitlab.numerics.threads import TORCH_THREADS
from fitlab.serving.budget import BUDGET_SECONDS, OverBudget, check, check_sweep, estimated_seconds, sweep_seconds
from fitlab.serving.cache import RunCache
from fitlab.sweeps import grid

FIELDS = list(Config().as_dict())

# Anything a caller (or a URL parser gone wrong) might pass for one field.
ANY_VALUE = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.integers(min_value=-3, max_value=300),
    st.floats(allow_nan=True, allow_infinity=True), st.floats(min_value=-1, max_value=20),
    st.text(max_size=8), st.binary(max_size=4), st.lists(st.integers(), max_size=2),
    st.decimals(allow_nan=True), st.fractions(), st.complex_numbers(),
)


def field_value(name):
    """Mostly values near the field's range, some of any type."""
    default = getattr(Config(), name)
    if isinstance(default, bool):
        return st.one_of(st.booleans(), ANY_VALUE)
    if name not in BOUNDS:  # a choice (not a number): its default, or anything
        return st.one_of(st.just(default), ANY_VALUE)
    low, high = BOUNDS[name]
    near = (st.floats(min_value=low / 2, max_value=high * 2) if name == "lr"
            else st.integers(min_value=int(low) - 2, max_value=int(high) + 2))
    return st.one_of(near, ANY_VALUE)


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@pytest.mark.parametrize("field", FIELDS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_any_value_of_one_field_builds_or_names_that_field(field, data):
    value = data.draw(field_value(field), label=field)
    try:
        config = Config(**{field: value})
    except ValueError as exc:
        assert f"{field}=" in str(exc)
    else:
        assert getattr(config, field) == value


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({name: field_value(name) for name in FIELDS}))
def test_any_config_builds_or_raises_a_value_error_naming_a_field(values):
    try:
        config = Config(**values)
    except ValueError as exc:
        assert any(f"{name}=" in str(exc) for name in FIELDS), str(exc)
    else:
        assert config.as_dict() == values


def test_too_much_work_is_refused_naming_the_fields_and_the_budget():
    heavy = Config(epochs=2000, engine="autograd")  # a valid Config: the budget is a policy
    with pytest.raises(OverBudget) as info:
        check(heavy)
    text = str(info.value)
    for part in ("epochs=2000", "batch_size=5", "width=5", "too much work", f"{BUDGET_SECONDS:g} s"):
        assert part in text
    assert info.value.fields["epochs"] == 2000 and info.value.seconds > info.value.budget
    # The same epochs in one batch per epoch is cheap enough.
    check(Config(epochs=2000, batch_size=50, engine="autograd"))
    # Library-only fields are named when they make the cost.
    with pytest.raises(OverBudget, match="n_samples=20000, in_features=256 is too much work"):
        check(Config(n_samples=20000, in_features=256, width=256, shared_repeats=8))


def test_the_budget_models_the_engine_that_runs():
    config = Config(epochs=2000, width=64)
    assert estimated_seconds(config) == estimated_seconds(config, "fast")
    assert estimated_seconds(config, "fast") < estimated_seconds(config, "autograd") / 5
    check(config)  # the fast engine does it within budget
    with pytest.raises(OverBudget):
        check(config, engine="autograd")
    # Undetached labels always run autograd, so they are budgeted as autograd.
    assert estimated_seconds(Config(detach=False, engine="fast")) == estimated_seconds(
        Config(detach=False), "autograd")


def test_a_sweeps_whole_grid_is_budgeted():
    # The link, swept over 16 learning rates by 16 seeds: each cell
    # alone is within a run's budget, the grid is not.
    heavy = Config(width=256, shared_repeats=3, n_train=199, batch_size=199, epochs=445)
    check(heavy)
    cells = grid(heavy, lr=[0.001 * (i + 1) for i in range(16)], seed=list(range(16)))
    with pytest.raises(OverBudget) as info:
        check_sweep(cells)
    assert info.value.cells == 256 and info.value.fields["width"] == 256
    assert "for a sweep, here of 256 configs" in str(info.value)
    # The Sweep tab's default grid is well within it, and the cost grows with the cells.
    default = grid(Config(), lr=[0.001, 0.003, 0.01, 0.03, 0.1], seed=[0, 1, 2, 3])
    check_sweep(default)
    assert sweep_seconds(default + default) > sweep_seconds(default)
    # Padded to the widest: one wide cell makes every cell cost as much.
    assert sweep_seconds(grid(Config(), width=[2, 64])) == pytest.approx(
        sweep_seconds(grid(Config(width=64), seed=[0, 1])))


@pytest.mark.parametrize("engine", ["fast", "autograd"])
def test_the_estimate_grows_with_epochs_batches_and_width(engine):
    base = Config(epochs=50, width=64)
    assert estimated_seconds(Config(epochs=100, width=64), engine) == pytest.approx(2 * estimated_seconds(base, engine))
    assert estimated_seconds(Config(epochs=50, width=64, batch_size=1), engine) > 3 * estimated_seconds(base, engine)
    narrow = estimated_seconds(Config(epochs=50, width=1), engine)
    width_part = [estimated_seconds(Config(epochs=50, width=w), engine) - narrow for w in (128, 256)]
    assert width_part[1] / width_part[0] == pytest.approx(4, rel=0.05)  # width²


# ---- divergence -------------------------------------------------------------


def test_a_diverged_chart_draws_the_finite_part_on_both_axes(diverged):
    history = diverged.history
    finite_points = int(np.isfinite(history[["train_loss", "test_loss"]]).to_numpy().sum())
    for log_scale in (False, True):
        values = pd.DataFrame(loss_chart(history, log_scale).to_dict()["datasets"].popitem()[1]).loss
        assert len(values) == len(loss_long(history, log_scale)) == finite_points
        assert np.isfinite(values).all() and (values > 0).all()


def test_a_diverged_csv_reads_back_nan_and_inf(diverged):
    text = history_csv(diverged)
    assert "nan" in text
    back = pd.read_csv(io.StringIO(text))
    for column in ("train_loss", "test_loss"):
        assert back[column].dtype == float
        assert np.array_equal(back[column].to_numpy(), diverged.history[column].to_numpy(), equal_nan=True)


def test_a_fully_nan_history_still_charts():
    # Every epoch after 0 is NaN for this one: the chart keeps epoch 0 alone.
    run = train(Config(lr=1, width=64, epochs=5))
    assert run.diverged_at == 1
    assert list(loss_long(run.history).epoch) == [0, 0]


# ---- many users ---------------------------------------------------------------

CONCURRENT = [Config(seed=s, width=w, shared_repeats=r, lr=lr, batch_size=b, epochs=30, tied=t)
              for s, w, r, lr, b, t in [(0, 5, 2, 0.01, 5, True), (1, 7, 0, 0.05, 3, True),
                                        (2, 16, 3, 0.02, 10, False), (3, 3, 8, 0.01, 1, True),
                                        (4, 32, 1, 0.005, 7, True), (5, 5, 2, 5.0, 5, True),
                                        (6, 9, 4, 0.03, 50, False), (7, 64, 2, 0.01, 5, True)]]


def test_concurrent_runs_equal_sequential_runs_bit_for_bit():
    sequential = [train(c) for c in CONCURRENT]
    concurrent = [None] * len(CONCURRENT)
    start = threading.Barrier(len(CONCURRENT))

    def worker(i):
        start.wait()
        concurrent[i] = train(CONCURRENT[i])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(CONCURRENT))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for one, other in zip(sequential, concurrent):
        for column in ("train_loss", "test_loss"):
            assert np.array_equal(one.history[column].to_numpy(), other.history[column].to_numpy(),
                                  equal_nan=True)
        assert np.array_equal(one.student_params.value.to_numpy(), other.student_params.value.to_numpy(),
                              equal_nan=True)


def test_torch_runs_one_thread_per_request():
    assert torch.get_num_threads() == TORCH_THREADS == 1


def rss_bytes() -> int:
    """Resident memory of this process (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads RSS from /proc (Linux)")
def test_cache_memory_stays_flat_over_200_distinct_configs():
    cache = RunCache(max_entries=64, max_bytes=128 * 2**20)  # the page's bounds
    # Distinct configs with tables of a few thousand rows each.
    configs = [Config(seed=i, width=48 + 16 * (i % 3), epochs=3) for i in range(200)]
    rss = {}
    for i, config in enumerate(configs, start=1):
        cache.get(config, train)
        if i in (100, 200):
            rss[i] = rss_bytes()
    growth = rss[200] - rss[100]
    print(f"\nRSS after 100 configs {rss[100] / 2**20:.1f} MiB, after 200 "
          f"{rss[200] / 2**20:.1f} MiB: growth {growth / 2**20:+.1f} MiB; "
          f"cache holds {len(cache)} runs, {cache.nbytes / 2**20:.1f} MiB")
    assert len(cache) == 64 and cache.nbytes <= cache.max_bytes
    # Once full, the next 100 runs replace old ones. Kept instead, they would
    # add about 100/64 of what the cache holds; allow allocator noise only.
    assert growth < cache.nbytes / 2
