"""Replicas behind the real proxy (tools/serve.py, deploy/nginx.conf):
`python -m tools.serve --replicas 2` serves the page through Debian's
nginx, passes the websocket through, spreads new sessions from one address
over both replicas and keeps a browser (its cookie) on one, answers the
health check, and stops nginx, every replica and their workers on SIGTERM,
leaving a clean log."""

from __future__ import annotations

import asyncio
import re
import signal
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.serverlog import log_problems
from tools.lecture import warm_replicas
from tools.serve import start_serve, wait_serving
from tools.server import free_port, health_seconds, running, stop_server, tree_pids
from tools.sessions import Heard, apart, session

# Slow (a proxy, two replicas, their workers) but not a load test: nothing here is timed against
# a crowd's goals and it mostly waits, so it runs beside the suite's other work, not alone.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    port = free_port()
    with log_path.open("w") as log:
        serve = start_serve(port, 2, log)
        try:
            replicas, nginx = wait_serving(log_path, serve)
            yield port, serve, replicas, nginx, log_path
        finally:
            if serve.poll() is None:  # a test failed before the SIGTERM test: its replicas stop too
                stop_server(serve, 60)


def active_sessions(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/metrics?families=active_sessions",
                                timeout=10) as answer:
        return int(re.search(r"^active_sessions (\d+)", answer.read().decode(), re.M).group(1))


async def hold(url: str, count: int, cookie: str | None, opened: asyncio.Event, stop: asyncio.Event):
    """`count` sessions on the proxy, each open until `stop`; `opened` once all have heard back."""
    heard = [Heard("") for _ in range(count)]
    tasks = [asyncio.create_task(session(url, "", h, until="first", stop=stop, cookie=cookie)) for h in heard]
    while not all(h.first is not None for h in heard):
        await asyncio.sleep(0.1)
    opened.set()
    await asyncio.gather(*tasks)
    return heard


def sessions_while_open(port: int, replicas: dict[int, int], count: int, cookie: str | None = None) -> list[int]:
    """Open `count` sessions through the proxy; the replicas' active sessions while they are open."""
    async def run():
        opened, stop = asyncio.Event(), asyncio.Event()
        holding = asyncio.create_task(hold(f"ws://127.0.0.1:{port}/_stcore/stream", count, cookie, opened, stop))
        await asyncio.wait_for(opened.wait(), 120)
        counts = [await asyncio.to_thread(active_sessions, p) for p in replicas]
        stop.set()
        await holding
        return counts

    return apart(asyncio.run, run())


def test_the_page_and_its_chart_come_through_the_proxy(served):
    port, *_ = served
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
        assert page.status == 200 and b"<html" in page.read().lower()
        assert re.match(r"fitlab_replica=[0-9a-f]{32}; Path=/; HttpOnly", page.headers["Set-Cookie"] or "")
    heard = apart(asyncio.run, asyncio.wait_for(session(f"ws://127.0.0.1:{port}/_stcore/stream", "", Heard(""),
                                               until="finished"), 120))
    assert heard.chart is not None and heard.finished is not None


def test_health_answers_through_the_proxy(served):
    port, *_ = served
    seconds = health_seconds(f"http://127.0.0.1:{port}", 5)
    assert seconds is not None and seconds <= 1


def test_new_sessions_from_one_address_spread_over_the_replicas(served):
    port, _, replicas, *_ = served
    before = [active_sessions(p) for p in replicas]
    during = sessions_while_open(port, replicas, 24)
    opened = [d - b for d, b in zip(during, before)]
    assert sum(opened) == 24
    # Each of 24 lands on either replica at random: fewer than 4 on one is a 1-in-10,000 chance.
    assert min(opened) >= 4, opened


def test_a_browser_with_its_cookie_stays_on_one_replica(served):
    port, _, replicas, *_ = served
    before = [active_sessions(p) for p in replicas]
    for cookie in ("fitlab_replica=0123456789abcdef0123456789abcdef", "fitlab_replica=feedc0de"):
        during = sessions_while_open(port, replicas, 8, cookie)
        assert sorted(d - b for d, b in zip(during, before)) == [0, 8], (cookie, during, before)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/_stcore/health",
                                     headers={"Cookie": "fitlab_replica=feedc0de"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Set-Cookie"] is None or "fitlab_replica" not in answer.headers["Set-Cookie"]


def test_sigterm_stops_the_proxy_every_replica_and_their_workers_and_the_log_stays_clean(served):
    port, serve, replicas, nginx, log_path = served
    apart(warm_replicas, list(replicas), serve.pid)  # each replica's warm-up runs the lesson's script in a worker
    workers = [pid for replica in replicas.values() for pid in tree_pids(replica)[1:] if _spawned(pid)]
    assert len(workers) >= len(replicas), workers
    pids = tree_pids(serve.pid)[1:]  # nginx's, the replicas, their workers and resource trackers
    assert {nginx, *replicas.values()} <= set(pids) and all(running(pid) for pid in pids)
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=60) == 0
    assert not [pid for pid in pids if running(pid)]
    assert health_seconds(f"http://127.0.0.1:{port}", 2) is None
    # A replica ends by SIGTERM itself (uvicorn raises it again once stopped), so atexit never
    # runs: a worker pool it did not close leaks semaphores, and their tracker warns here.
    assert not log_problems(log_path.read_text()), log_problems(log_path.read_text())


def _spawned(pid: int) -> bool:
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
