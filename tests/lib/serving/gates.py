"""Driving a job gate (fitlab.serving.jobs) from test threads, and seeing it
only as the page does: through JobGate.slot, the places it tells and the
exceptions it raises."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest

PATIENCE = 10  # seconds a test waits for a thread before calling it stuck


def wait_until(condition) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, "a thread is stuck"
        time.sleep(0.001)


def start(target, *args, **kwargs) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, kwargs=kwargs, daemon=True)
    thread.start()
    return thread


def run(gate, func, *args, **slot):
    """func(*args) in one of the gate's slots (`slot`: JobGate.slot's keywords)."""
    with gate.slot(**slot):
        return func(*args)


def queued(target, *args, **kwargs) -> threading.Thread:
    """target(*args, on_wait=…, **kwargs) in a thread, returned once the gate
    has told it its place: its job is in line."""
    told = threading.Event()
    thread = start(target, *args, on_wait=lambda place: told.set(), **kwargs)
    assert told.wait(PATIENCE), "the job never joined the line"
    return thread


def assert_idle(gate) -> None:
    """No job holds a slot or waits: every slot is had at once, none told a place."""
    with contextlib.ExitStack() as held:
        for _ in range(gate.slots):
            held.enter_context(gate.slot(on_wait=lambda place: pytest.fail(f"the gate is busy: {place}")))


def hold_every_slot(gate, patience: float = 60) -> tuple[threading.Event, list[threading.Thread]]:
    """Threads holding all of the gate's slots until the event is set (or
    `patience` seconds: a page under test may take long to reach its wait)."""
    release, held = threading.Event(), threading.Barrier(gate.slots + 1)

    def hold():
        with gate.slot():
            held.wait(patience)
            release.wait(patience)

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(gate.slots)]
    for thread in threads:
        thread.start()
    held.wait(patience)
    return release, threads
