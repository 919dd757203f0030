"""fitlab.sweep on an executor: a grid split into batched chunks, trained by
worker processes (a process pool, a real dask.distributed cluster on
127.0.0.1), gives one process's histories bit for bit, in grid order, with
progress counted in configs."""

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from distributed import Client, LocalCluster

import fitlab
from fitlab import Config
from fitlab.sweeps import MAX_CONFIGS, grid

pytestmark = pytest.mark.slow  # worker processes: a process pool, a dask cluster

BASE = Config(epochs=25, shared_repeats=3, n_train=30, batch_size=7)
AXES = dict(width=[2, 5, 9], seed=[0, 3], lr=[0.01, 0.08])  # 12 configs, chunks of 5: 5, 5, 2


def assert_same_as_one_process(results, base=BASE, axes=AXES):
    one = fitlab.sweep(base, **axes)
    assert list(results) == list(one) == grid(base, **axes)
    for config, history in one.items():
        assert np.array_equal(results[config].to_numpy(), history.to_numpy()), config


def test_a_process_pool_gives_one_process_histories_and_counts_configs():
    seen = []
    with ProcessPoolExecutor(2) as pool:
        results = fitlab.sweep(BASE, executor=pool, chunk=5, progress=lambda d, t: seen.append((d, t)), **AXES)
    assert_same_as_one_process(results)
    done = [d for d, _ in seen]
    # One call per chunk as it arrives, in whatever order they finish.
    assert sorted(np.diff([0] + done)) == [2, 5, 5] and {t for _, t in seen} == {12}


def test_a_dask_cluster_gives_one_process_histories():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        seen = []
        results = fitlab.sweep(BASE, executor=client.get_executor(), chunk=4,
                               progress=lambda d, t: seen.append((d, t)), **AXES)
        # The chunks ran in the cluster's worker processes, not here.
        workers = client.run(lambda: __import__("sys").modules.get("fitlab.engines.numpy_stack") is not None)
    assert_same_as_one_process(results)
    assert [d for d, _ in seen] == [4, 8, 12] and {t for _, t in seen} == {12}
    assert any(workers.values())


def test_an_executor_takes_a_grid_past_one_process_bound():
    big = dict(seed=list(range(20)), lr=[0.01 * k for k in range(1, 16)])  # 300 configs
    with pytest.raises(ValueError, match=f"too large: allowed 1 to {MAX_CONFIGS}"):
        grid(Config(epochs=2, width=3), **big)
    with ProcessPoolExecutor(2) as pool:
        results = fitlab.sweep(Config(epochs=2, width=3), executor=pool, **big)
    assert len(results) == 300
    config = Config(epochs=2, width=3, seed=17, lr=0.01 * 7)
    single = fitlab.train(config).history
    assert np.allclose(results[config].train_loss, single.train_loss, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("chunk", [0, MAX_CONFIGS + 1])
def test_a_chunk_out_of_range_is_a_value_error(chunk):
    with ProcessPoolExecutor(1) as pool, pytest.raises(ValueError, match=f"^chunk={chunk} is out of range"):
        fitlab.sweep(BASE, executor=pool, chunk=chunk, **AXES)
