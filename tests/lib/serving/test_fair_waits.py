"""Fair, visible waits at the job gate (fitlab.serving.jobs), with real threads: a
small job is not stuck behind big ones, a big one is not starved by a stream
of small ones, a session has one job in line at most, and every waiting job
keeps hearing its place."""

from __future__ import annotations

import threading
import time

import pytest

from fitlab.serving.jobs import JobGate, Replaced, ServerBusy
from tests.lib.serving.gates import PATIENCE, queued, run, start, wait_until

BIG, SMALL = 6.0, 0.1  # estimated seconds: a width-256 run, a default one


def test_a_small_job_goes_before_big_ones_that_arrived_first():
    gate = JobGate(slots=1)
    started = []
    with gate.slot():  # the one running job
        for i in range(5):
            queued(run, gate, started.append, f"big {i}", estimate=BIG)
        queued(run, gate, started.append, "small", estimate=SMALL)
        time.sleep(0.2)  # waited 0.2 s: twice its estimate, a thirtieth of theirs
    wait_until(lambda: len(started) == 6)
    assert started == ["small", "big 0", "big 1", "big 2", "big 3", "big 4"]


def test_a_big_job_is_not_starved_by_a_stream_of_small_ones():
    gate = JobGate(slots=1)
    started, stop, feeding = [], threading.Event(), set()

    def small_jobs():  # always one small job in line, each running 10 ms
        while not stop.is_set():
            run(gate, lambda: started.append("small") or time.sleep(0.01), estimate=SMALL,
                on_wait=lambda place: feeding.add(threading.get_ident()))

    with gate.slot():
        feeders = [start(small_jobs) for _ in range(2)]
        wait_until(lambda: len(feeding) == 2)  # both in line
        big = queued(run, gate, started.append, "big", estimate=BIG)
    try:
        wait_until(lambda: "big" in started)  # while the small ones keep coming
        assert started.count("small") > 10  # they really overtook it meanwhile
    finally:
        stop.set()
    for thread in (*feeders, big):
        thread.join(PATIENCE)


def test_a_sessions_new_job_replaces_its_waiting_one_and_keeps_its_place():
    gate = JobGate(slots=1, max_waiting=2)
    outcomes = []

    def job(owner, name, on_wait=None):
        try:
            run(gate, outcomes.append, name, owner=owner, on_wait=on_wait)
        except Replaced:
            outcomes.append(f"{name} replaced")

    with gate.slot():
        queued(job, "a", "a's first")
        queued(job, "b", "b's")
        # The line is full, yet a's new job is no extra one: it takes a's place.
        queued(job, "a", "a's second")
        wait_until(lambda: "a's first replaced" in outcomes)
        with pytest.raises(ServerBusy) as busy:
            run(gate, lambda: None, owner="c")
        assert busy.value.waiting == 2
    wait_until(lambda: len(outcomes) == 3)
    assert outcomes == ["a's first replaced", "a's second", "b's"]


def test_a_wait_cut_short_and_rejoined_keeps_its_place():
    """Streamlit stops a waiting page run (from on_wait) to rerun it: the
    rerun's job is the same visitor's, and keeps the time waited."""
    gate = JobGate(slots=1)
    outcomes = []

    class Rerun(Exception):
        """Stands for Streamlit's rerun, raised from a page element while waiting."""

    def stopped_run():
        def rerun(place):
            raise Rerun
        try:
            run(gate, outcomes.append, "first run", on_wait=rerun, owner="a")
        except Rerun:
            pass

    with gate.slot():
        start(stopped_run).join(PATIENCE)
        queued(run, gate, outcomes.append, "b's", owner="b")
        queued(run, gate, outcomes.append, "a's rerun", owner="a")
    wait_until(lambda: len(outcomes) == 2)
    assert outcomes == ["a's rerun", "b's"]


def test_a_waiting_job_is_told_its_place_at_once_and_again_while_it_waits():
    gate = JobGate(slots=1, refresh=0.05)
    told = []
    with gate.slot():
        start(run, gate, lambda: None, on_wait=told.append, estimate=BIG)
        wait_until(lambda: len(told) >= 1)
        assert told[0] == 0
        start(run, gate, lambda: None, on_wait=told.append, estimate=BIG)
        wait_until(lambda: len(told) >= 8)  # reminded though nothing changed
    assert set(told) <= {0, 1}


def test_a_gate_refuses_settings_it_cannot_honour():
    with pytest.raises(ValueError, match="refresh=0"):
        JobGate(refresh=0)


def test_a_small_job_gets_into_a_full_line_of_big_ones():
    """The biggest (the latest of equals) is turned away in its stead; a big
    newcomer to a full line is turned away itself."""
    gate = JobGate(slots=1, max_waiting=3)
    outcomes = []

    def job(name, estimate, on_wait=None):
        try:
            run(gate, outcomes.append, name, estimate=estimate, on_wait=on_wait)
        except ServerBusy:
            outcomes.append(f"{name} turned away")

    with gate.slot():
        for i in range(3):
            queued(job, f"big {i}", BIG)
        with pytest.raises(ServerBusy):
            run(gate, lambda: None, estimate=BIG)
        queued(job, "small", SMALL)
        wait_until(lambda: "big 2 turned away" in outcomes)
        with pytest.raises(ServerBusy) as busy:  # the line is still full: the small job took big 2's place
            run(gate, lambda: None, estimate=BIG)
        assert busy.value.waiting == 3
        time.sleep(0.2)  # the small one's ratio passes the big ones'
    wait_until(lambda: len(outcomes) == 4)
    assert outcomes == ["big 2 turned away", "small", "big 0", "big 1"]
