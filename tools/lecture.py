"""A lecture on 127.0.0.1: a class of 200 on one link, behind tools.serve's
replicas, some students moving to heavy settings of their own
(`python -m tools.load --lecture`; the suite's tests/e2e/test_lecture.py).
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import websockets

from tools.server import stop_server
from tools.sessions import HEAVY_RUN, Heard, ask, say_seconds, session, tree_cpu_seconds, tree_resident_mib, wait_quiet

# A lecture's link on the projector: not trained by the warm-up, cheap to train.
LECTURE_LINK = "width=12&lr=0.05&seed=7&epochs=300"


@dataclass
class Student:
    """One student of a lecture: what their session heard on the link, and,
    for one who moved to settings of their own, after the move (seconds
    since they asked)."""

    link: Heard
    moved: Heard | None = None

    @property
    def exception(self) -> bool:
        """Shown an exception, on the link or after the move."""
        return self.link.exception or (self.moved is not None and self.moved.exception)


async def student(ws_url: str, me: Student, heavy: str | None, move: asyncio.Event,
                  stop: asyncio.Event) -> Student:
    """One student's tab: the link until its page has finished; a mover then
    waits for `move` and asks for `heavy` on the same websocket, noting what
    comes back until told their place, their chart, or that the server is
    busy; the tab stays open until `stop`."""
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=60,
                                  ping_interval=None) as ws:
        await ask(ws, me.link)
        if heavy is not None:
            await move.wait()
            me.moved = Heard(heavy)
            await ask(ws, me.moved, done=lambda h: told(h) is not None or h.busy)
        await stop.wait()
    return me


# A child process: the health check's seconds through the proxy (or "none"),
# one line a second, until its stdin closes.
HEALTH_EVERY_SECOND = """
import sys, threading, time
from tools.server import health_seconds
ended = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), ended.set()), daemon=True).start()
while not ended.is_set():
    took = health_seconds(sys.argv[1], 10)
    print("none" if took is None else took, flush=True)
    ended.wait(max(0.0, 1.0 - (took or 0)))
"""


@dataclass
class Lecture:
    """A lecture's outcome (seconds; MiB)."""

    students: list[Student]
    late: Heard
    health: list[float | None]
    rss_before: float
    rss_peak: float
    dropped: int = 0
    cpu: tuple[float, float, float] = (0.0, 0.0, 0.0)  # seconds: wall, the servers' CPU, this process's
    pages_cpu: tuple[float, float] = (0.0, 0.0)  # seconds until every page had finished: wall, the servers' CPU
    load: tuple[float, float] = (0.0, 0.0)  # the machine's 1-minute load average as it began and ended

    def charts(self) -> list[float | None]:
        return [s.link.chart for s in self.students]

    def movers(self) -> list[Heard]:
        return [s.moved for s in self.students if s.moved is not None]

    def lines(self) -> list[str]:
        charts = sorted(c for c in self.charts() if c is not None)
        heard = sorted(told(h) for h in self.movers() if told(h) is not None)
        missing = len(self.students) - len(charts)
        healths = [h for h in self.health if h is not None]
        return [
            f"{len(self.students)} students on one link: chart median {_pct(charts, 50)}, 95th percentile "
            f"{_pct(charts, 95)}, slowest {_pct(charts, 100)}{f'; {missing} got none' if missing else ''}; "
            f"{sum(s.exception for s in self.students)} saw an exception, {self.dropped} were dropped",
            f"{len(self.movers())} moved to heavy settings: told their place, shown their training's progress or "
            f"their chart after at most "
            f"{_pct(heard, 100)} (median {_pct(heard, 50)}); {len(self.movers()) - len(heard)} heard nothing; "
            f"{sum(h.busy for h in self.movers())} told the server is busy",
            f"a late student on the cached link: chart after {say_seconds(self.late.chart)}",
            f"health through the proxy, every second: at most {_pct(sorted(healths), 100)}"
            f"{f', {len(self.health) - len(healths)} unanswered' if len(healths) < len(self.health) else ''}",
            f"proxy, replicas and workers resident: {self.rss_before:.0f} MiB idle, {self.rss_peak:.0f} MiB "
            f"at most (+{self.rss_peak - self.rss_before:.0f})",
            f"over {self.cpu[0]:.1f} s: the servers used {self.cpu[1]:.1f} CPU s, this load generator "
            f"{self.cpu[2]:.1f} CPU s (the machine has {os.cpu_count()} cores)",
            f"until every page had finished ({self.pages_cpu[0]:.1f} s): the servers used "
            f"{self.pages_cpu[1]:.1f} CPU s, {1000 * self.pages_cpu[1] / len(self.students):.0f} ms a page, "
            f"{self.pages_cpu[1] / max(self.pages_cpu[0], 1e-9):.2f} of a core on average",
            f"the machine's load average: {self.load[0]:.1f} as it began, {self.load[1]:.1f} as it ended",
        ]


def told(h: Heard) -> float | None:
    """When a mover first heard: their place in line, their training's
    progress (a job that got its slot at once) or their chart."""
    times = [t for t in (h.waiting, h.progress, h.chart) if t is not None]
    return min(times) if times else None


def _pct(ordered: list[float], q: float) -> str:
    if not ordered:
        return "never"
    return f"{ordered[min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1)]:.2f} s"


async def lecture(url: str, pid: int, students: int = 200, movers: int = 40, arrive_within: float = 10.0,
                  late_after: float = 2.0, patience: float = 120.0) -> Lecture:
    """A lecture hall on one link: `students` sessions open LECTURE_LINK,
    arriving evenly within `arrive_within` seconds; once every page has
    finished, `movers` of them ask for heavy settings of their own (distinct
    HEAVY_RUN seeds) while the others stay connected; `late_after` seconds
    later a late student opens the (now cached) link. Health is asked every
    second through it all, and the memory of `pid`'s whole tree sampled."""
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    rss_before = tree_resident_mib(pid)
    peak = rss_before
    began, servers_cpu, own_cpu = time.monotonic(), tree_cpu_seconds(pid), time.process_time()
    load_began = os.getloadavg()[0]
    move, stop, done = asyncio.Event(), asyncio.Event(), asyncio.Event()
    crowd = [Student(Heard(LECTURE_LINK)) for _ in range(students)]
    heavies = [HEAVY_RUN.format(i=1000 + i) for i in range(movers)]

    every = max(1, students // movers)  # every `every`-th to arrive moves later

    async def arrive(i: int, me: Student):
        await asyncio.sleep(i * arrive_within / students)
        mover = i % every == 0 and i // every < movers
        return await student(ws_url, me, heavies[i // every] if mover else None, move, stop)

    async def watch():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_resident_mib(pid))
            await asyncio.sleep(0.5)

    # Health is timed by a process of its own: this one parses 200 sessions'
    # messages, and a health check timed here waited for its interpreter too.
    checker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", HEALTH_EVERY_SECOND, url, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])

    tasks = [asyncio.create_task(arrive(i, me)) for i, me in enumerate(crowd)]
    watcher = asyncio.create_task(watch())
    try:
        deadline = time.monotonic() + patience
        while any(s.link.finished is None for s in crowd) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        pages_cpu = (time.monotonic() - began, tree_cpu_seconds(pid) - servers_cpu)
        move.set()
        await asyncio.sleep(late_after)
        late = Student(Heard(LECTURE_LINK))
        try:
            await asyncio.wait_for(_late(ws_url, late), 30)
        except TimeoutError:
            pass
        while any(told(s.moved) is None and not s.moved.busy for s in crowd if s.moved is not None) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        done.set()
        _, stuck = await asyncio.wait(tasks, timeout=10)
        for task in stuck:  # still waiting for a page that never finished
            task.cancel()
        ended = await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(watcher, return_exceptions=True)
        checker.stdin.close()  # its end
        lines = (await checker.stdout.read()).splitlines()
        health = [None if line.strip() == b"none" else float(line) for line in lines]
        await checker.wait()
    dropped = sum(isinstance(e, Exception) for e in ended)  # a websocket closed under a student
    cpu = (time.monotonic() - began, tree_cpu_seconds(pid) - servers_cpu, time.process_time() - own_cpu)
    return Lecture(crowd, late.link, health, rss_before, peak, dropped, cpu, pages_cpu,
                   (load_began, os.getloadavg()[0]))


async def _late(ws_url: str, me: Student) -> None:
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=60,
                                  ping_interval=None) as ws:
        await ask(ws, me.link, done=lambda h: h.chart is not None)



def lecture_on_replicas(port: int, replicas: int) -> Lecture:
    """`python -m tools.serve` on 127.0.0.1:`port` with `replicas`, the
    teacher's own default page on each replica, their warm-ups done, then a
    lecture."""
    from tools.serve import start_serve, wait_serving

    with tempfile.TemporaryDirectory() as folder:
        log_path = Path(folder) / "serve.log"
        with log_path.open("w") as log:
            serve = start_serve(port, replicas, log)
            try:
                ports, _ = wait_serving(log_path, serve)
                warm_replicas(list(ports), serve.pid)
                return asyncio.run(lecture(f"http://127.0.0.1:{port}", serve.pid))
            finally:
                stop_server(serve, 60)


def warm_replicas(ports: list[int], pid: int) -> None:
    """The teacher's default page on each replica or server (on
    127.0.0.1:`ports`, asked directly: through the proxy a few pages may all
    hash to one), read to its end, then wait until `pid`'s tree is quiet:
    every warm-up done, as on a server up before the class."""
    async def pages():
        await asyncio.wait_for(asyncio.gather(*(
            session(f"ws://127.0.0.1:{p}/_stcore/stream", "", Heard(""), until="finished") for p in ports)), 120)

    asyncio.run(pages())
    wait_quiet(pid)

