"""Workers that stay small and alive (fitlab.serving.isolation): a lesson call
releases what it built, a worker is renewed by memory as well as by calls,
a worker found dead while idle is replaced before it is handed a call, and
a renewed worker starts warm."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from fitlab import Config
from fitlab.failure.explained import explained_blog
from fitlab.serving.isolation import WorkerPool, resident_bytes

ROOT = Path(__file__).resolve().parents[3]
# The pool's mechanics need no torch in the workers: they start in a fraction of the time.
BARE = ()
MiB = 2**20


def _live_tensors() -> int:
    gc.collect()
    # type() rather than isinstance: isinstance asks each object for its
    # __class__, and torch.distributed's deprecated reduce_op warns when asked.
    return sum(1 for o in gc.get_objects() if issubclass(type(o), torch.Tensor))


@pytest.mark.slow  # seconds of CPU: the full suite's, not the inner loop's
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_a_lesson_call_leaves_no_tensor_behind():
    """Torch's anomaly mode, when backward() fails, leaves the failing
    AddmmBackward0 in a cycle through C++ that the garbage collector cannot
    see; without explained_blog breaking it, each call kept the net, its
    inputs and activations (10 tensors at the blog's sizes)."""
    config = Config(detach=False, width=7)
    explained_blog(config)  # first-call imports and caches aside
    before = _live_tensors()
    for _ in range(3):
        assert explained_blog(config).anomaly_node == "AddmmBackward0"
    assert _live_tensors() == before


@pytest.mark.slow  # worker processes
def test_a_workers_memory_stays_flat_over_lesson_calls():
    """At width 256 a call kept about 1.8 MiB (317 → 353 MiB over 20
    calls); now the resident size stops growing after the first calls."""
    config, warm_calls, measured_calls = Config(detach=False, width=256), 12, 20
    pool = WorkerPool(size=1, max_rss=None, preload=("fitlab.failure.explained",))
    try:
        for _ in range(warm_calls):
            assert pool.run(explained_blog, config).anomaly_node == "AddmmBackward0"
        (pid,) = pool.pids()
        start = resident_bytes(pid)
        for _ in range(measured_calls):
            pool.run(explained_blog, config)
        end = resident_bytes(pid)
        assert pool.pids() == [pid]
    finally:
        pool.close()
    per_call = (end - start) / measured_calls
    print(f"\nworker RSS {start / MiB:.1f} → {end / MiB:.1f} MiB over {measured_calls} "
          f"width-256 lesson calls: {per_call / MiB:+.2f} MiB a call")
    assert per_call < 0.5 * MiB


@pytest.mark.slow  # worker processes
def test_a_worker_over_its_memory_cap_is_renewed():
    capped = WorkerPool(size=1, max_rss=1, preload=BARE)  # every worker is over one byte
    roomy = WorkerPool(size=1, max_rss=2**40, preload=BARE)
    try:
        assert len({capped.run(os.getpid) for _ in range(3)}) == 3
        assert len({roomy.run(os.getpid) for _ in range(3)}) == 1
    finally:
        capped.close()
        roomy.close()


@pytest.mark.slow  # worker processes
def test_a_worker_killed_while_idle_is_replaced_before_it_is_used():
    pool = WorkerPool(size=1, preload=BARE)
    try:
        first = pool.run(os.getpid)
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        # Until the kernel has taken it down: it can be waited for (WNOWAIT leaves it
        # to the pool to reap). Waiting for its statm to go (resident_bytes None) ran
        # to the deadline every time, as nothing reaps it before pool.run; an all-zero
        # statm comes while it still exits, before it can be waited for.
        while os.waitid(os.P_PID, first, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        second = pool.run(os.getpid)  # no WorkerDied: the dead one is found at checkout
        assert second != first and pool.pids() == [second]
    finally:
        pool.close()


@pytest.mark.slow  # worker processes
def test_a_renewed_worker_has_imported_what_the_pools_calls_needed():
    imported = "'json' in __import__('sys').modules"
    fresh = WorkerPool(size=1, calls_per_worker=1, preload=BARE)
    try:
        assert fresh.run(eval, imported) is False  # a bare worker has not imported it
        assert fresh.run(json.dumps, [1]) == "[1]"  # a call that needs json; its worker is renewed
        assert fresh.run(eval, imported) is True  # the new worker imported json as it started
    finally:
        fresh.close()


@pytest.mark.slow  # worker processes
def test_a_pool_warmed_with_one_worker_runs_its_next_call_in_it():
    pool = WorkerPool(size=2, preload=BARE)
    try:
        pool.warm(1)
        [warmed] = pool.pids()
        assert pool.run(os.getpid) == warmed and pool.pids() == [warmed]  # no second, cold worker
    finally:
        pool.close()


@pytest.mark.slow  # a worker process that imports torch
def test_a_worker_whose_server_closed_the_pipe_while_it_started_ends_quietly():
    # As when the server stops while a worker imports: its "ready" meets a closed pipe.
    worker = subprocess.Popen([sys.executable, "-m", "fitlab.serving.isolation", "torch"], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    worker.stdout.close()
    worker.stdin.close()
    assert worker.wait(timeout=120) == 0
    assert worker.stderr.read() == b""  # no BrokenPipeError traceback in the server's log
