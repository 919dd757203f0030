"""Workers that stay small and alive (fitlab.serving.isolation): a lesson call
releases what it built, so renewal by calls bounds a worker's memory, a worker
found dead while idle is replaced before it is handed a call, a renewed
worker starts warm, and calls one after another keep to one warm worker."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

from fitlab import Config
from fitlab.failure.explained import explained_blog
from fitlab.serving.isolation import CALLS_PER_WORKER, WorkerPool
from tests.lib.serving.isolated_calls import resident_bytes
from tools.server import running

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
    calls); now the resident size stops growing after the first calls, so
    renewing a worker after its calls (CALLS_PER_WORKER) bounds its memory."""
    config, warm_calls, measured_calls = Config(detach=False, width=256), 12, 20
    pool = WorkerPool(size=1, preload=("fitlab.failure.explained",))
    try:
        for _ in range(warm_calls):
            assert pool.run(explained_blog, config).anomaly_node == "AddmmBackward0"
        pid, start = pool.run(os.getpid), pool.run(resident_bytes)
        for _ in range(measured_calls):
            pool.run(explained_blog, config)
        end = pool.run(resident_bytes)
        assert pool.run(os.getpid) == pid
    finally:
        pool.close()
    per_call = (end - start) / measured_calls
    print(f"\nworker RSS {start / MiB:.1f} → {end / MiB:.1f} MiB over {measured_calls} "
          f"width-256 lesson calls: {per_call / MiB:+.2f} MiB a call")
    assert per_call < 0.5 * MiB
    assert start + CALLS_PER_WORKER * per_call < 512 * MiB


@pytest.mark.slow  # worker processes
def test_a_worker_killed_while_idle_is_replaced_before_it_is_used():
    pool = WorkerPool(size=1, preload=BARE)
    try:
        first = pool.run(os.getpid)
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{first}").exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # until the executor's own thread has seen it die and reaped it
        second = pool.run(os.getpid)  # no WorkerDied: the dead one is found at checkout
        assert second != first and pool.run(os.getpid) == second
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


@pytest.mark.slow  # a worker process
def test_a_worker_started_from_a_page_run_imports_nothing_of_the_page(monkeypatch):
    # Streamlit runs the page as __main__ (its file in __file__), and a spawned
    # worker imports its parent's __main__ first, as __mp_main__.
    page = types.ModuleType("__main__")
    page.__file__ = str(ROOT / "streamlit_app.py")
    monkeypatch.setitem(sys.modules, "__main__", page)
    pool = WorkerPool(size=1, preload=BARE)
    try:
        assert pool.run(eval, "[m for m in ('streamlit', 'ui') if m in __import__('sys').modules]") == []
    finally:
        pool.close()


@pytest.mark.slow  # worker processes
def test_calls_one_after_another_reuse_one_warm_worker():
    pool = WorkerPool(size=2, preload=BARE)
    try:
        before = {p.pid for p in multiprocessing.active_children()}
        first = pool.run(os.getpid)
        assert [pool.run(os.getpid) for _ in range(3)] == [first] * 3  # no second, cold worker
        assert {p.pid for p in multiprocessing.active_children()} - before == {first}
    finally:
        pool.close()


_STOPS_WHILE_A_WORKER_STARTS = """
import multiprocessing, threading, time
from fitlab.serving.isolation import WorkerDied, WorkerPool

pool = WorkerPool(size=1, preload=("torch",))

def warm_up():  # as ui/warmup.py's: a call its stopping server ends is not cached, and no error
    try:
        pool.run(int)
    except WorkerDied:
        pass

threading.Thread(target=warm_up, daemon=True).start()
while not multiprocessing.active_children():
    time.sleep(0.01)
print(*[p.pid for p in multiprocessing.active_children()])
"""


@pytest.mark.slow  # a worker process that imports torch
def test_a_worker_whose_server_stops_while_it_starts_ends_quietly():
    # As when the server stops while its warm-up's daemon thread waits for a
    # worker that imports torch: nothing in the server's log.
    server = subprocess.run([sys.executable, "-c", _STOPS_WHILE_A_WORKER_STARTS],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert server.returncode == 0 and server.stderr == ""
    pids = list(map(int, server.stdout.split()))
    assert pids  # the worker had started
    for pid in pids:
        assert not running(pid)
