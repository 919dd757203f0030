"""The job gate, with real threads: a few jobs at once, the rest in line in
arrival order, each told its place; a full line refuses."""

from __future__ import annotations

import threading
import time

import pytest

from fitlab.serving.jobs import JobGate, ServerBusy
from tests.lib.serving.gates import PATIENCE, assert_idle, queued, run, start, wait_until


def test_no_more_than_slots_jobs_run_at_once():
    gate = JobGate(slots=2)
    lock, now, peak = threading.Lock(), [0], [0]

    def job():
        with gate.slot():
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.02)
            with lock:
                now[0] -= 1

    threads = [start(job) for _ in range(12)]
    for thread in threads:
        thread.join(PATIENCE)
    assert peak[0] == 2
    assert_idle(gate)


def test_jobs_start_in_the_order_they_arrived_and_are_told_their_place():
    gate = JobGate(slots=1, refresh=60)  # told as it joins only, within the test
    started, places = [], {i: [] for i in range(4)}

    def job(i):
        with gate.slot(on_wait=places[i].append):
            started.append(i)

    with gate.slot():  # the one running job
        threads = []
        for i in range(4):
            threads.append(start(job, i))
            wait_until(lambda: places[i])  # in line before the next arrives
    for thread in threads:
        thread.join(PATIENCE)
    assert started == [0, 1, 2, 3]
    assert places[0] == [0]
    assert places[3][0] == 3
    # Not woken as the line moves up (the slot is handed to the next alone): told again after `refresh`.
    assert [len(told) for told in places.values()] == [1, 1, 1, 1]


def test_a_full_line_turns_the_next_job_away():
    gate = JobGate(slots=1, max_waiting=2)
    with gate.slot():
        waiters = [queued(run, gate, lambda: None) for _ in range(2)]
        with pytest.raises(ServerBusy, match="2 jobs are already waiting"):
            with gate.slot():
                pass
    for thread in waiters:
        thread.join(PATIENCE)
    assert run(gate, lambda x: x + 1, 1) == 2


def test_a_wait_cut_short_leaves_the_line_and_a_failing_job_frees_its_slot():
    gate = JobGate(slots=1)
    failures, told = [], []

    class Rerun(Exception):
        """Stands for Streamlit's rerun, raised from a page element while waiting."""

    def impatient():
        def give_up(place):
            raise Rerun
        try:
            with gate.slot(on_wait=give_up):
                pass
        except Rerun:
            failures.append("left the line")

    with gate.slot():
        start(impatient).join(PATIENCE)
        assert failures == ["left the line"]
        next_job = start(run, gate, lambda: None, on_wait=told.append)
        wait_until(lambda: told)
        assert told[0] == 0  # none ahead: the impatient job left the line
    next_job.join(PATIENCE)
    with pytest.raises(ZeroDivisionError):
        run(gate, lambda: 1 / 0)
    assert_idle(gate)
    assert run(gate, lambda: "next") == "next"
