"""A class at once, on 127.0.0.1: many bare websocket sessions on one fitlab
server, and what each of them hears back, when.

A session here is what a browser tab is to the server: a websocket on
`/_stcore/stream` speaking Streamlit's protobuf messages (a BackMsg asking
for a script run with the page's query string; ForwardMsgs back: the
page's elements, then `script_finished`). No browser draws anything, so the
times are the server's alone.

    python -m tools.load [--heavy 40] [--lessons 10] [--watcher auto] [--visitors N]

starts `streamlit run streamlit_app.py` (the repository's config.toml: no
file watcher), waits for its warm-up (a first visitor's page read to its
end, then the server quiet), opens `--heavy` sessions on distinct
costly-but-allowed links, then a visitor of the cached default page, a
health check and a small new run, and prints the figures docs/measurements/robustness.md records. The suite's
load test (tests/e2e/test_load.py) runs the same with its goals as asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tools.server import free_port, health_seconds, start_server, stop_server, wait_healthy
from ui.warmup import LESSON_AFTER_PAGE_SECONDS

# Costly but allowed (each under the 8 s budget): width-256 runs, distinct
# by seed so none is cached, and lessons (the replay, the script in a worker,
# the fix gallery).
HEAVY_RUN = "width=256&shared_repeats=3&n_train=199&batch_size=199&epochs=445&seed={i}"
HEAVY_LESSON = "detach=false&width=256&shared_repeats=8&n_train=199&batch_size=1&epochs=30&seed={i}"
SMALL_RUN = "width=6&epochs=30&seed=77"  # not cached, about 0.05 s of training
# A lecture's link on the projector: not trained by the warm-up, cheap to train.
LECTURE_LINK = "width=12&lr=0.05&seed=7&epochs=300"


@dataclass
class Heard:
    """What one session heard, in seconds since it asked (None: not yet).

    first      the first message back
    waiting    the first "Waiting to start …" note (its place in line)
    silence    the longest silence while in line: before a place note
               (since the message before it) or after one (until the next
               message: its next place or its slot; until the end if still
               in line). A job's run between two waits is not in line (a
               lesson's page waits for its training, its replay and the
               blog's script in turn).
    chart      the first chart
    finished   the end of the page's run
    busy       told the server is busy
    progress   the first progress bar (a lecture's mover: a job that got its slot at once)
    exception  shown an exception
    latest     the latest message so far
    in_line    whether the latest message was a place note
    """

    query: str
    first: float | None = None
    waiting: float | None = None
    silence: float | None = None
    chart: float | None = None
    finished: float | None = None
    busy: bool = False
    progress: float | None = None
    exception: bool = False
    latest: float | None = None
    in_line: bool = False


def resident_mib(pid: int) -> float:
    """Resident memory of `pid` and its children (the workers), in MiB."""
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    return _resident(pids)


def tree_resident_mib(pid: int) -> float:
    """Resident memory of `pid` and all its descendants (tools.serve: nginx,
    the replicas and their workers), in MiB."""
    return _resident(tree_pids(pid))


def tree_pids(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    pids, seen = [pid], []
    while pids:
        p = pids.pop()
        seen.append(p)
        try:
            pids += [int(c) for t in Path(f"/proc/{p}/task").iterdir()
                     for c in (t / "children").read_text().split()]
        except OSError:
            pass
    return seen


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of `pid` and its descendants so far."""
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += cpu_seconds(p)
        except OSError:
            continue
    return total


def wait_quiet(pid: int, quiet: float = 0.05, seconds: float = 3.0, patience: float = 180,
               cpu: Callable[[int], float] = tree_cpu_seconds) -> None:
    """Wait until `pid` has used under `quiet` of a core over `seconds`,
    counted by `cpu` (by default its whole tree: replicas, workers): the
    servers' warm-ups done (their lesson run, a worker started, its first
    script), as on a server up before the class. Call it after a first page
    on every replica: a warm-up waits LESSON_AFTER_PAGE_SECONDS, quiet,
    before its lesson run, so the quiet is looked for only after that (a
    lecture began during the wait, and its first students met the replicas
    importing torch._dynamo)."""
    time.sleep(LESSON_AFTER_PAGE_SECONDS + 1)
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        before = cpu(pid)
        time.sleep(seconds)
        if cpu(pid) - before < quiet * seconds:
            return


def _resident(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total / 2**20


async def session(ws_url: str, query: str, heard: Heard, until: str = "finished",
                  stop: asyncio.Event | None = None, cookie: str | None = None) -> Heard:
    """Open a session on `query`, ask for the page, and note what comes
    back until `until` ("first", "chart" or "finished") is heard; with
    `stop`, until it is set, holding the websocket open meanwhile, as a
    browser tab's stays. `cookie`: the Cookie header a browser would send."""
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=30,
                                  ping_interval=None,
                                  additional_headers=None if cookie is None else {"Cookie": cookie}) as ws:
        await _ask(ws, heard, lambda h: getattr(h, until) is not None, query=query, stop=stop)
        if stop is not None:
            await stop.wait()
    return heard


async def _ask(ws, heard: Heard, done=lambda h: h.finished is not None, query: str | None = None,
               stop: asyncio.Event | None = None) -> None:
    """Ask for the page of `query` (default heard.query) on `ws` and note
    what comes back until `done(heard)`, or until `stop` is set."""
    ask = BackMsg()
    ask.rerun_script.query_string = heard.query if query is None else query
    ask.rerun_script.page_script_hash = ""
    started = time.perf_counter()
    await ws.send(ask.SerializeToString())
    while not done(heard) and not (stop is not None and stop.is_set()):
        try:  # with `stop`, a look at it twice a second
            data = await asyncio.wait_for(ws.recv(), timeout=None if stop is None else 0.5)
        except TimeoutError:
            continue
        _note(heard, ForwardMsg.FromString(data), time.perf_counter() - started)
    if heard.in_line:  # still in line when no longer listened to: silent since
        heard.silence = max(heard.silence, time.perf_counter() - started - heard.latest)


def _note(heard: Heard, msg: ForwardMsg, now: float) -> None:
    """Note in `heard` what `msg`, come `now` seconds after the ask, tells."""
    if heard.first is None:
        heard.first = now
    kind, placed = msg.WhichOneof("type"), False
    if kind == "script_finished":
        heard.finished = now
    elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        which = element.WhichOneof("type")
        if which == "vega_lite_chart" and heard.chart is None:
            heard.chart = now
        elif which == "exception":
            heard.exception = True
        elif which == "progress" and heard.progress is None:
            heard.progress = now
        elif which == "alert" and element.alert.body.startswith("Waiting to start"):
            heard.waiting = heard.waiting if heard.waiting is not None else now
            placed = True
        elif which == "alert" and "too busy" in element.alert.body:
            heard.busy = True
    if placed or heard.in_line:
        heard.silence = max(heard.silence or 0.0, now - (heard.latest or 0.0))
    heard.latest, heard.in_line = now, placed


@dataclass
class Figures:
    """A load test's outcome (seconds; MiB)."""

    heavy: list[Heard]
    visitor: Heard
    health: float | None
    small: Heard
    rss_before: float
    rss_peak: float

    def lines(self) -> list[str]:
        heard = [h.first for h in self.heavy]
        told = [h for h in self.heavy if h.waiting is not None]
        silent = sum(1 for h in heard if h is None)
        return [
            f"{len(self.heavy)} heavy sessions: the slowest heard back after "
            f"{max((h for h in heard if h is not None), default=float('nan')):.2f} s"
            f"{f', {silent} heard nothing' if silent else ''}; {len(told)} were told their place "
            f"(the longest silence while in line {max((h.silence for h in told), default=0):.2f} s, "
            f"goal 2 s); "
            f"{sum(h.busy for h in self.heavy)} were told the server is busy",
            f"a new visitor's cached default page: first chart after {_s(self.visitor.chart)}",
            f"health check: {_s(self.health)}",
            f"a small new run: its page finished after {_s(self.small.finished)}"
            f"{' (told the server is busy)' if self.small.busy else ''}",
            f"server + workers resident: {self.rss_before:.0f} MiB before, {self.rss_peak:.0f} MiB at most",
        ]


def _s(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds:.2f} s"


async def class_at_once(url: str, pid: int, heavy: int = 40, lessons: int = 10,
                        settle: float = 3.0, patience: float = 25.0) -> Figures:
    """`heavy` sessions (`lessons` of them on the lesson) at once, then,
    `settle` seconds later, a visitor of the cached default page, a health
    check and a small new run; each of those three gets `patience` seconds."""
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    rss_before = resident_mib(pid)
    stop = asyncio.Event()
    queries = [(HEAVY_LESSON if i < lessons else HEAVY_RUN).format(i=i) for i in range(heavy)]
    crowd = [Heard(q) for q in queries]
    tasks = [asyncio.create_task(session(ws_url, q, h, stop=stop)) for q, h in zip(queries, crowd)]
    peak = rss_before

    async def watch_memory():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, resident_mib(pid))
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch_memory())
    await asyncio.sleep(settle)
    visitor, small = Heard(""), Heard(SMALL_RUN)
    health = asyncio.to_thread(health_seconds, url, patience)
    outcomes = await asyncio.gather(
        asyncio.wait_for(session(ws_url, "", visitor, until="chart"), patience),
        asyncio.wait_for(session(ws_url, SMALL_RUN, small), patience),
        health, return_exceptions=True)
    stop.set()
    await asyncio.gather(*tasks, watcher, return_exceptions=True)
    health_s = outcomes[2] if not isinstance(outcomes[2], BaseException) else None
    return Figures(crowd, visitor, health_s, small, rss_before, peak)


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
        await _ask(ws, me.link)
        if heavy is not None:
            await move.wait()
            me.moved = Heard(heavy)
            await _ask(ws, me.moved, done=lambda h: told(h) is not None or h.busy)
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
            f"a late student on the cached link: chart after {_s(self.late.chart)}",
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
        await _ask(ws, me.link, done=lambda h: h.chart is not None)


async def visitors_at_once(url: str, count: int) -> list[Heard]:
    """`count` visitors of the cached default page in the same moment."""
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    visitors = [Heard("") for _ in range(count)]
    await asyncio.gather(*(session(ws_url, "", v, until="chart") for v in visitors))
    return visitors


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


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{ordered[0]:.2f} / {ordered[len(ordered) // 2]:.2f} / {ordered[-1]:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heavy", type=int, default=40)
    parser.add_argument("--lessons", type=int, default=10)
    parser.add_argument("--watcher", default=None, help="server.fileWatcherType instead of config.toml's")
    parser.add_argument("--visitors", type=int, default=0,
                        help="instead: this many visitors of the cached default page at once")
    parser.add_argument("--lecture", action="store_true",
                        help="instead: a class of 200 on one link, on tools.serve's replicas behind nginx")
    parser.add_argument("--replicas", type=int, default=2, help="with --lecture: tools.serve's replicas")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    if args.lecture:
        print("\n".join(lecture_on_replicas(port, args.replicas).lines()))
        return
    with open(os.devnull, "w") as log:
        server = start_server(port, log, *(["--server.fileWatcherType", args.watcher] if args.watcher else []))
        try:
            wait_healthy(url, server)
            ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
            first, idle = Heard(""), Heard("")
            asyncio.run(session(ws_url, "", first))  # to its end: then the warm-up goes on (wait_quiet)
            wait_quiet(server.pid)  # the crowd comes to a server up before it
            asyncio.run(session(ws_url, "", idle, until="chart"))
            print(f"idle: the first visitor's default page: first chart after {_s(first.chart)}; "
                  f"the next visitor's (cached): {_s(idle.chart)}")
            if args.visitors:
                visitors = asyncio.run(visitors_at_once(url, args.visitors))
                print(f"{args.visitors} visitors of the cached page at once: first message (fastest / median / "
                      f"slowest) {spread([v.first for v in visitors])}, chart {spread([v.chart for v in visitors])}")
                return
            figures = asyncio.run(class_at_once(url, server.pid, args.heavy, args.lessons))
            print("\n".join(figures.lines()))
        finally:
            stop_server(server, 30)


if __name__ == "__main__":
    main()
