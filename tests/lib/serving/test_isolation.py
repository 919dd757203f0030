"""Process-wide state kept out of other sessions: torch's anomaly mode is
process-wide, so the anomaly replay runs in a warm worker process
(fitlab.serving.isolation), and other threads' runs are exactly what they are alone."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest
import torch

from fitlab import Config, train
from fitlab.failure.explained import explained_blog
from fitlab.serving.isolation import WorkerDied, WorkerPool, run_isolated
from tests.lib.serving.isolated_calls import anomaly_enabled, die, pid_after, raise_timeout
from tools.bench_isolation import FAILING, ROUNDS, TRAINING, trainers
from tools.server import running

ROOT = Path(__file__).resolve().parents[3]  # where a child python finds fitlab and tests


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_torchs_anomaly_mode_is_process_wide():
    """Why the replay needs a process of its own: anomaly mode switched on in
    one thread is on in every thread."""
    seen = []
    entered, done = threading.Event(), threading.Event()

    def replay():
        with torch.autograd.detect_anomaly(check_nan=False):
            entered.set()
            done.wait(10)

    thread = threading.Thread(target=replay)
    thread.start()
    entered.wait(10)
    seen.append(torch.is_anomaly_enabled())
    done.set()
    thread.join()
    seen.append(torch.is_anomaly_enabled())
    assert seen == [True, False]


# The pool's own mechanics need no torch in the workers: they start in a
# fraction of the time.
BARE = ()


@pytest.fixture
def pool():
    workers = WorkerPool(size=2, preload=BARE)
    yield workers
    workers.close()


def seen(explained) -> tuple:
    """What the page shows of an explained run (the script's temporary path aside)."""
    return (explained.anomaly_node, [(f.line, f.function, f.code) for f in explained.anomaly_frames],
            explained.marks, explained.report.error, explained.script)


@pytest.mark.slow  # worker processes
def test_an_isolated_call_returns_by_value_in_another_process(pool):
    config = Config(detach=False, width=7)
    there, here = pool.run(explained_blog, config), explained_blog(config)
    assert seen(there) == seen(here) and there.anomaly_node == "AddmmBackward0"
    assert pool.run(pid_after, 0) != os.getpid()
    assert not pool.run(anomaly_enabled)  # the replay switched it off behind itself
    with pytest.raises(ValueError, match="width=-1 is out of range"):
        pool.run(Config, width=-1)


@pytest.mark.slow  # worker processes
def test_a_worker_that_dies_is_replaced():
    pool = WorkerPool(size=1, preload=BARE)
    try:
        first = pool.run(pid_after, 0)
        with pytest.raises(WorkerDied):
            pool.run(die)
        second = pool.run(pid_after, 0)
        assert second != first and pool.run(pid_after, 0) == second
        assert not running(first)  # the dead one is reaped
        assert pool.run(explained_blog, Config(detach=False)).anomaly_node is not None
    finally:
        pool.close()


@pytest.mark.slow  # worker processes
def test_a_call_over_its_timeout_is_stopped_and_its_worker_replaced():
    pool = WorkerPool(size=1, preload=BARE)
    try:
        before = pool.run(pid_after, 0)
        started = time.perf_counter()
        with pytest.raises(TimeoutError):
            pool.run(pid_after, 30, timeout=1)
        assert time.perf_counter() - started < 15
        after = pool.run(pid_after, 0)
        assert after != before and pool.run(pid_after, 0) == after
        _wait_gone(before)  # killed, not left running its call
    finally:
        pool.close()


@pytest.mark.slow  # worker processes
def test_a_calls_own_timeout_error_is_its_exception_and_keeps_its_worker(pool):
    before = pool.run(pid_after, 0)
    with pytest.raises(TimeoutError, match="the call's own deadline"):
        pool.run(raise_timeout)
    assert pool.run(pid_after, 0) == before


@pytest.mark.slow  # worker processes
def test_the_pool_never_runs_more_workers_than_its_size(pool):
    answers, before = [], {p.pid for p in multiprocessing.active_children()}
    threads = [threading.Thread(target=lambda: answers.append(pool.run(pid_after, 0.2)))
               for _ in range(8)]
    for thread in threads:
        thread.start()
    peak = 0
    while any(t.is_alive() for t in threads):
        peak = max(peak, len({p.pid for p in multiprocessing.active_children()} - before))
        time.sleep(0.01)
    for thread in threads:
        thread.join()
    assert len(answers) == 8 and len(set(answers)) <= 2 and peak <= 2


@pytest.mark.slow  # worker processes
def test_a_closed_pool_starts_fresh_workers_when_used_again(pool):
    first = pool.run(pid_after, 0)
    pool.close()
    second = pool.run(pid_after, 0)
    assert second != first and not running(first)


# A server's pool as it stops by SIGTERM (ui/warmup.py closes it for good, and
# the process ends by the signal, without atexit) while page runs still call it.
AMID_CALLS = """
import os, signal, threading, time
from fitlab.serving.isolation import WorkerDied, WorkerPool
from tests.lib.serving.isolated_calls import pid_after
pool, pids, refused = WorkerPool(size=2, preload=()), [], []
def calls():
    while True:
        try:
            pids.append(pool.run(pid_after, 0.05))
        except WorkerDied:
            refused.append(1)
            return
threads = [threading.Thread(target=calls, daemon=True) for _ in range(4)]
for thread in threads:
    thread.start()
while len(pids) < 8:
    time.sleep(0.01)
pool.close(final=True)
for thread in threads:
    thread.join(20)
print(len(refused), *set(pids), flush=True)
os.kill(os.getpid(), signal.SIGTERM)
"""


@pytest.mark.slow  # worker processes
def test_a_final_close_amid_calls_stops_every_worker_and_leaks_nothing():
    import subprocess
    import sys

    ended = subprocess.run([sys.executable, "-c", AMID_CALLS], capture_output=True, text=True, timeout=90,
                           cwd=ROOT)
    refused, *workers = map(int, ended.stdout.split())
    assert ended.returncode == -15 and refused == 4  # every caller told, none starting a worker after
    assert len(workers) >= 2 and not any(running(pid) for pid in workers)
    assert ended.stderr == ""  # no semaphores leaked, no traceback of two shutdowns at once


@pytest.mark.slow  # worker processes
def test_a_worker_is_renewed_after_its_calls():
    pool = WorkerPool(size=1, calls_per_worker=2, preload=BARE)
    try:
        pids = [pool.run(pid_after, 0) for _ in range(4)]
        assert pids[0] == pids[1] != pids[2] == pids[3]
    finally:
        pool.close()


# --- the proof: the replay leaks into no other thread -------------------------

@pytest.mark.slow  # worker processes
def test_the_anomaly_replay_leaks_into_no_other_threads_run():
    replayed = Config(detach=False, width=7)
    alone = {c: train(c) for c in FAILING + TRAINING}
    expected_trace = seen(run_isolated(explained_blog, replayed))  # also warms a worker

    traces, stop = [], threading.Event()

    def replay_loop():
        while not stop.is_set():
            traces.append(seen(run_isolated(explained_blog, replayed)))

    # In-process, the replay slowed other sessions' autograd runs 6-7x: anomaly
    # mode is process-wide. Here it is never on in this process while the
    # replays run (what that costs in time: python -m tools.bench_isolation).
    anomaly_seen, sampling = [], threading.Event()

    def sample_anomaly_mode():
        while not sampling.is_set():
            anomaly_seen.append(torch.is_anomaly_enabled())
            time.sleep(0.001)

    looping, sampler = threading.Thread(target=replay_loop), threading.Thread(target=sample_anomaly_mode)
    looping.start()
    sampler.start()
    try:
        _, results = trainers()
    finally:
        stop.set()
        looping.join()
        sampling.set()
        sampler.join()

    assert len(traces) >= 2  # the replays really ran alongside
    assert all(t == expected_trace for t in traces)
    assert anomaly_seen and not any(anomaly_seen)
    assert len(results) == 2 * ROUNDS * (len(alone) + len(FAILING))
    for config, run in results:
        if config.detach:
            assert run.error is None
            assert run.history.equals(alone[config].history)
            assert run.student_params.equals(alone[config].student_params)
        else:
            assert run.error.message == alone[config].error.message
            assert "Good luck" not in run.error.message  # anomaly mode's wording


@pytest.mark.slow  # worker processes
def test_workers_end_when_the_server_is_killed():
    """No orphans: a worker whose parent dies (kill -9, a crash) sees it
    gone and exits."""
    import subprocess
    import sys

    server = subprocess.run(
        [sys.executable, "-c",
         "import os; from fitlab.serving.isolation import WorkerPool; "
         "from tests.lib.serving.isolated_calls import pid_after; "
         "pool = WorkerPool(size=1, preload=()); print(pool.run(pid_after, 0), flush=True); os._exit(9)"],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    _wait_gone(int(server.stdout.split()[0]))


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 20
    while running(pid):
        assert time.monotonic() < deadline, f"process {pid} is still running"
        time.sleep(0.05)

