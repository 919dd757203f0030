"""A class at once (tools/load.py): 40 bare websocket sessions on distinct
costly-but-allowed links (width-256 runs and lessons) on a fresh server up
before the class (the teacher's page read to its end, the warm-up done),
then a new visitor of the cached default page, a health check and a small
new run, against the goals: the visitor's chart within 3 s, health within
1 s, every session hearing back within 5 s and never 5 s without a word
while it waits (the 2 s goal for that is tools/load.py's to measure), the
small run's page finished within 20 s, memory bounded, and a clean server
log."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.serverlog import log_problems
from tools.lecture import warm_replicas
from tools.load import class_at_once
from tools.server import free_port, start_server, stop_server, wait_healthy
from tools.sessions import apart

pytestmark = pytest.mark.load

HEAVY, LESSONS = 40, 10
# Server and workers together: the server with torch (~400 MiB), at most two
# workers, each renewed over 512 MiB.
MEMORY_CAP_MIB = 1536
# Seconds a waiting session may go without a word (the goal is 2 s: see below).
SILENCE_BOUND = 5


@pytest.fixture(scope="module")
def crowd(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("load") / "server.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        server = start_server(port, log)
        try:
            wait_healthy(url, server)
            # Healthy is not warm. The warm-up's second stage (ui/warmup.py)
            # waits for a page read to its end: with the first page closed at
            # its chart, a class lesson's training imported torch._dynamo, and
            # the stage ran mid-class or as the server stopped (its workers'
            # tracebacks then in the log).
            apart(warm_replicas, [port], server.pid)
            figures = apart(asyncio.run, class_at_once(url, server.pid, HEAVY, LESSONS))
        finally:
            stop_server(server, 30)
    print("\n" + "\n".join(figures.lines()))
    return figures, log_path.read_text()


def test_every_session_hears_back_and_sees_its_place(crowd):
    figures, _ = crowd
    assert all(h.first is not None and h.first <= 5 for h in figures.heavy), [h.first for h in figures.heavy]
    waited = [h for h in figures.heavy if h.waiting is not None]
    assert len(waited) >= HEAVY - 2 - 8  # two run at once; the rest wait, or are told the server is busy
    # Never long without a word while in line (Heard.silence): told its place
    # soon after the page's previous message, and again, or given its slot,
    # soon after each place; a job's run between two of a page's waits is not
    # silence in line. The goal, 2 s (the gate tells every 1 s), is python -m
    # tools.load's to measure on the shared machine; the test holds the bound
    # that tells a gate that keeps telling from one that stops.
    assert all(h.silence <= SILENCE_BOUND for h in waited), sorted(round(h.silence, 2) for h in waited)[-6:]


def test_a_new_visitor_the_health_check_and_a_small_run_are_served(crowd):
    figures, _ = crowd
    assert figures.visitor.chart is not None and figures.visitor.chart <= 3
    assert figures.health is not None and figures.health <= 1
    assert not figures.small.busy
    assert figures.small.finished is not None and figures.small.finished <= 20


def test_memory_stays_bounded_and_the_log_clean(crowd):
    figures, log = crowd
    assert figures.rss_peak <= MEMORY_CAP_MIB
    assert not log_problems(log), log_problems(log)
