"""The server's draw gate (ui.state.drawing over a fitlab.serving.jobs.JobGate):
at most DRAWING_AT_ONCE page runs draw at once, in the order they came, cached pages before
page runs back from a heavy job, and a page run waiting for, or running, a heavy job holds no
slot, so it never keeps a cached page from being drawn."""

from __future__ import annotations

import threading
import time

import pytest
import streamlit as st

from fitlab.serving.jobs import JobGate
from tests.lib.serving.gates import hold_every_slot
from ui import state

PATIENCE = 10


def wait_until(condition) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, "a thread is stuck"
        time.sleep(0.005)


@pytest.fixture
def fresh_resources():
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_a_few_pages_draw_at_once_and_a_waiting_job_holds_no_slot(fresh_resources):
    release_slots, _ = hold_every_slot(state.job_gate())

    results = []

    def page_with_a_heavy_job():
        with state.drawing():
            results.append(state.heavy("the training", lambda: "trained", estimate=1.0))

    waiting_page = threading.Thread(target=page_with_a_heavy_job, daemon=True)
    waiting_page.start()
    wait_until(lambda: len(state.job_gate()._line) == 1)  # its job waits in line

    lock, inside, peak, leave = threading.Lock(), [0], [0], threading.Event()

    def cached_page():
        with state.drawing():
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            leave.wait(PATIENCE)
            with lock:
                inside[0] -= 1

    pages = [threading.Thread(target=cached_page, daemon=True) for _ in range(state.DRAWING_AT_ONCE + 2)]
    for page in pages:
        page.start()
    # Every slot is a cached page's: the page waiting for its job holds none.
    wait_until(lambda: inside[0] == state.DRAWING_AT_ONCE)
    time.sleep(0.1)  # the others stay out
    assert inside[0] == state.DRAWING_AT_ONCE
    leave.set()
    for page in pages:
        page.join(PATIENCE)
    assert peak[0] == state.DRAWING_AT_ONCE and inside[0] == 0
    release_slots.set()
    waiting_page.join(PATIENCE)
    assert results == ["trained"]  # its job ran, and it took a slot back to draw the rest


def test_pages_waiting_for_one_training_hold_no_slot(fresh_resources, monkeypatch):
    """More page runs than slots on one untrained config: the one that
    trains, done, takes a slot back while the others wait for its run."""
    import fitlab
    from fitlab import Config

    trained, release, train = threading.Event(), threading.Event(), fitlab.train

    def slow_train(config, progress=None):
        trained.set()
        release.wait(PATIENCE)
        return train(config)

    monkeypatch.setattr(state.fitlab, "train", slow_train)
    monkeypatch.setattr(state, "st", type("NoPage", (), {"container": staticmethod(lambda **_: Silent()),
                                                         "session_state": {}})())
    config, runs = Config(epochs=3, seed=41), []

    def page():
        with state.drawing():
            runs.append(state.run_with_progress(config))

    pages = [threading.Thread(target=page, daemon=True) for _ in range(state.DRAWING_AT_ONCE + 3)]
    pages[0].start()
    trained.wait(PATIENCE)
    for p in pages[1:]:
        p.start()
    time.sleep(0.2)  # the others are waiting for the run now
    release.set()
    for p in pages:
        p.join(PATIENCE)
    assert len(runs) == len(pages) and all(r is runs[0] for r in runs)


class Silent:
    """A stand-in for the progress bar's container and its element: their
    calls, outside a page."""

    def progress(self, *args, **kwargs):
        pass

    def html(self, *args, **kwargs):
        pass

    def empty(self):
        return self


def draw_gate(slots: int) -> JobGate:
    return JobGate(slots=slots, max_waiting=None)


def assert_idle(gate: JobGate) -> None:
    assert gate._running == 0 and not gate._line


def test_draws_go_in_the_order_they_were_asked_for_and_none_is_turned_away():
    gate, order, lock = draw_gate(2), [], threading.Lock()
    gate.acquire(estimate=state.CACHED_DRAW)
    gate.acquire(estimate=state.CACHED_DRAW)

    def page(i: int):
        gate.acquire(estimate=state.CACHED_DRAW)
        with lock:
            order.append(i)
        gate.release()

    waiting = []
    for i in range(40):  # past a job gate's longest line
        waiting.append(threading.Thread(target=page, args=(i,), daemon=True))
        waiting[-1].start()
        wait_until(lambda: len(gate._line) == i + 1)
    gate.release()
    # A newcomer while the line drains takes its place at the end.
    late = threading.Thread(target=page, args=(40,), daemon=True)
    late.start()
    for thread in [*waiting, late]:
        thread.join(PATIENCE)
    gate.release()
    assert order == list(range(41))
    assert_idle(gate)


def test_a_page_back_from_a_heavy_job_waits_behind_cached_pages():
    gate, order, lock = draw_gate(1), [], threading.Lock()
    gate.acquire()

    def page(name: str, estimate: float):
        gate.acquire(estimate=estimate)
        with lock:
            order.append(name)
        gate.release()

    threads = []
    for name, estimate in (("trained 1", state.FRESH_DRAW), ("cached 1", state.CACHED_DRAW),
                           ("trained 2", state.FRESH_DRAW), ("cached 2", state.CACHED_DRAW)):
        threads.append(threading.Thread(target=page, args=(name, estimate), daemon=True))
        threads[-1].start()
        wait_until(lambda: len(gate._line) == len(threads))
    time.sleep(0.1)  # each has waited a while: a cached page's ratio grows 40 times faster
    gate.release()
    for thread in threads:
        thread.join(PATIENCE)
    assert order == ["cached 1", "cached 2", "trained 1", "trained 2"]


def test_a_page_back_from_a_heavy_job_steps_aside_before_each_build(monkeypatch):
    # One slot: a page run back from its training holds it and is about to
    # build its fresh run's tables; a cached page comes meanwhile.
    gate, order, lock = draw_gate(1), [], threading.Lock()
    monkeypatch.setattr(state, "draw_gate", lambda: gate)
    back, came = threading.Event(), threading.Event()

    def note(what: str):
        with lock:
            order.append(what)

    def trained_page():
        with state.drawing():
            with state._not_drawing():
                state._held.job_ran = True  # as heavy() marks it
            back.set()
            came.wait(PATIENCE)
            state.let_others_draw()
            note("trained page builds")

    def cached_page():
        with state.drawing():
            state.let_others_draw()  # no job ran: it keeps its slot
            note("cached page")

    trained = threading.Thread(target=trained_page, daemon=True)
    trained.start()
    assert back.wait(PATIENCE)
    cached = threading.Thread(target=cached_page, daemon=True)
    cached.start()
    wait_until(lambda: len(gate._line) == 1)
    time.sleep(0.1)  # the cached page's ratio passes the trained one's (a 40 times shorter estimate)
    came.set()
    for thread in (trained, cached):
        thread.join(PATIENCE)
    assert order == ["cached page", "trained page builds"]
    assert_idle(gate)


def test_a_page_that_steps_aside_goes_before_the_others_back_from_jobs_that_came_later():
    gate, order, lock = draw_gate(1), [], threading.Lock()
    ticket = gate.acquire(estimate=state.FRESH_DRAW)  # this thread: back from a job, drawing

    def page(name: str, estimate: float):
        gate.acquire(estimate=estimate)
        with lock:
            order.append(name)
        gate.release()

    threads = [threading.Thread(target=page, args=args, daemon=True)
               for args in (("trained later", state.FRESH_DRAW), ("cached", state.CACHED_DRAW))]
    for i, thread in enumerate(threads):
        thread.start()
        wait_until(lambda: len(gate._line) == i + 1)
    time.sleep(0.1)  # the cached page's ratio passes this thread's
    gate.step_aside(ticket)
    with lock:
        order.append("stepped aside")
    gate.release()
    for thread in threads:
        thread.join(PATIENCE)
    assert order == ["cached", "stepped aside", "trained later"]
    assert_idle(gate)


def test_a_page_steps_aside_only_for_a_higher_ratio():
    gate = draw_gate(1)
    ticket = gate.acquire(estimate=state.CACHED_DRAW)  # a cached page drawing

    def trained_page():
        gate.acquire(estimate=state.FRESH_DRAW)
        gate.release()

    later = threading.Thread(target=trained_page, daemon=True)
    later.start()
    wait_until(lambda: len(gate._line) == 1)
    gate.step_aside(ticket)  # keeps its slot: the waiting draw's ratio is lower
    assert ticket.holds and len(gate._line) == 1
    gate.release()
    later.join(PATIENCE)
    assert_idle(gate)
