"""A class of 200 (tools/load.py's lecture): `python -m tools.serve
--replicas 2` (a replica per core behind nginx), 200 bare websocket
sessions on one untrained link within 10 s, then 40 of them moving to
heavy settings of their own while 160 stay connected, a late student, and a
health check every second, against the issue's goals: every student's
chart, 95th percentile within 10 s and median within 5 s; the late
student's chart within 3 s; health within 1 s throughout; every mover told
their place, shown their training's progress or their chart within 5 s; memory within 2 GB over the
idle servers; nobody dropped, no exception shown, a clean log."""

from __future__ import annotations

import asyncio
import math

import pytest

from tests.e2e.serverlog import log_problems
from tools.lecture import lecture, warm_replicas
from tools.lecture import told as told_at
from tools.serve import start_serve, wait_serving
from tools.server import free_port, stop_server
from tools.sessions import apart

pytestmark = [pytest.mark.load, pytest.mark.lecture]

STUDENTS, MOVERS = 200, 40
MEMORY_GROWTH_MIB = 2048


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1)]


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("lecture") / "serve.log"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        serve = start_serve(port, 2, log)
        try:
            replicas, _ = wait_serving(log_path, serve)
            # The teacher's own page first, on a server up before the class
            # comes in: the replicas' warm-ups done.
            apart(warm_replicas, list(replicas), serve.pid)
            figures = apart(asyncio.run, lecture(url, serve.pid, STUDENTS, MOVERS))
        finally:
            stop_server(serve, 60)
    print("\n" + "\n".join(figures.lines()))
    return figures, log_path.read_text()


def test_every_student_gets_the_chart_soon(hall):
    figures, _ = hall
    charts = figures.charts()
    assert all(c is not None for c in charts), sum(c is None for c in charts)
    assert percentile(charts, 50) <= 5 and percentile(charts, 95) <= 10, figures.lines()[0]
    assert not any(s.exception for s in figures.students) and figures.dropped == 0


def test_a_late_student_gets_the_cached_chart_within_3_s(hall):
    figures, _ = hall
    assert figures.late.chart is not None and figures.late.chart <= 3, figures.late


def test_every_mover_hears_from_the_server_within_5_s(hall):
    figures, _ = hall
    movers = figures.movers()
    assert len(movers) == MOVERS
    told = [told_at(h) for h in movers]
    assert all(t is not None and t <= 5 for t in told), sorted(t or math.inf for t in told)[-5:]
    assert not any(h.busy for h in movers)


def test_health_answers_within_1_s_throughout(hall):
    figures, _ = hall
    assert len(figures.health) >= 10
    assert all(h is not None and h <= 1 for h in figures.health), max(h or math.inf for h in figures.health)


def test_memory_stays_within_2_gb_and_the_log_clean(hall):
    figures, log = hall
    assert figures.rss_peak - figures.rss_before <= MEMORY_GROWTH_MIB
    assert not log_problems(log), log_problems(log)[:10]

