"""A class at once, on 127.0.0.1: many bare websocket sessions on one fitlab
server, and what each of them hears back, when.

A session here is what a browser tab is to the server: a websocket on
`/_stcore/stream` speaking Streamlit's protobuf messages (a BackMsg asking
for a script run with the page's query string; ForwardMsgs back: the
page's elements, then `script_finished`). No browser draws anything, so the
times are the server's alone.

    python -m tools.load [--heavy 40] [--lessons 10] [--watcher auto] [--visitors N]

starts `streamlit run streamlit_app.py` (the repository's config.toml: no
file watcher), opens `--heavy` sessions on distinct costly-but-allowed
links, then a visitor of the cached default page, a health check and a
small new run, and prints the figures docs/measurements/robustness.md records. The suite's
load test (tests/e2e/test_load.py) runs the same with its goals as asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tools.server import free_port, health_seconds, start_server, stop_server, wait_healthy

# Costly but allowed (each under the 8 s budget): width-256 runs, distinct
# by seed so none is cached, and lessons (the replay, the script in a worker,
# the fix gallery).
HEAVY_RUN = "width=256&shared_repeats=3&n_train=199&batch_size=199&epochs=445&seed={i}"
HEAVY_LESSON = "detach=false&width=256&shared_repeats=8&n_train=199&batch_size=1&epochs=30&seed={i}"
SMALL_RUN = "width=6&epochs=30&seed=77"  # not cached, about 0.05 s of training


@dataclass
class Heard:
    """What one session heard, in seconds since it asked (None: not yet).

    first      the first message back
    waiting    the first "Waiting to start …" note (its place in line)
    unheard    the silence before that note: how long after the message
               before it (a lesson's page runs a job, then waits for the next)
    chart      the first chart
    finished   the end of the page's run
    places     every place-in-line note, as (seconds, text)
    """

    query: str
    first: float | None = None
    waiting: float | None = None
    unheard: float | None = None
    chart: float | None = None
    finished: float | None = None
    places: list = field(default_factory=list)
    busy: bool = False


def resident_mib(pid: int) -> float:
    """Resident memory of `pid` and its children (the workers), in MiB."""
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    total = 0
    for p in pids:
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total / 2**20


async def session(ws_url: str, query: str, heard: Heard, until: str = "finished",
                  stop: asyncio.Event | None = None) -> Heard:
    """Open a session on `query`, ask for the page, and note what comes
    back until `until` ("first", "chart" or "finished") is heard or `stop`
    is set; the websocket stays open meanwhile, as a browser tab's does."""
    async with websockets.connect(ws_url, subprotocols=["streamlit"], max_size=None,
                                  open_timeout=30, ping_interval=None) as ws:
        ask = BackMsg()
        ask.rerun_script.query_string = query
        ask.rerun_script.page_script_hash = ""
        started = time.perf_counter()
        last = 0.0
        await ws.send(ask.SerializeToString())
        while getattr(heard, until) is None and not (stop is not None and stop.is_set()):
            try:
                data = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            now = time.perf_counter() - started
            msg = ForwardMsg.FromString(data)
            kind = msg.WhichOneof("type")
            if heard.first is None:
                heard.first = now
            if kind == "script_finished":
                heard.finished = now
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                which = element.WhichOneof("type")
                if which == "vega_lite_chart" and heard.chart is None:
                    heard.chart = now
                elif which == "alert" and element.alert.body.startswith("Waiting to start"):
                    if heard.waiting is None:
                        heard.waiting, heard.unheard = now, now - last
                    heard.places.append((now, element.alert.body))
                elif which == "alert" and "too busy" in element.alert.body:
                    heard.busy = True
            last = now
        if stop is not None and until == "finished":
            await stop.wait()
    return heard


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
        gaps = [b[0] - a[0] for h in told for a, b in zip(h.places, h.places[1:])]
        gaps += [h.unheard for h in told]
        silent = sum(1 for h in heard if h is None)
        return [
            f"{len(self.heavy)} heavy sessions: the slowest heard back after "
            f"{max((h for h in heard if h is not None), default=float('nan')):.2f} s"
            f"{f', {silent} heard nothing' if silent else ''}; {len(told)} were told their place "
            f"(the longest silence before a first place or between updates {max(gaps, default=0):.2f} s, "
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


async def visitors_at_once(url: str, count: int) -> list[Heard]:
    """`count` visitors of the cached default page in the same moment."""
    ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
    visitors = [Heard("") for _ in range(count)]
    await asyncio.gather(*(session(ws_url, "", v, until="chart") for v in visitors))
    return visitors


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
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(os.devnull, "w") as log:
        server = start_server(port, log, *(["--server.fileWatcherType", args.watcher] if args.watcher else []))
        try:
            wait_healthy(url, server)
            ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
            first, idle = Heard(""), Heard("")
            asyncio.run(session(ws_url, "", first, until="chart"))
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
