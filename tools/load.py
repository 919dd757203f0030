"""A class at once, on 127.0.0.1: many bare websocket sessions
(tools/sessions.py) on one fitlab server, and what each of them hears back, when.

    python -m tools.load [--heavy 40] [--lessons 10] [--watcher auto] [--visitors N] [--lecture]

starts `streamlit run streamlit_app.py` (the repository's config.toml: no
file watcher), waits for its warm-up (a first visitor's page read to its
end, then the server quiet), opens `--heavy` sessions on distinct
costly-but-allowed links, then a visitor of the cached default page, a
health check and a small new run, and prints the figures
docs/measurements/robustness.md records (`--lecture`: tools/lecture.py's
class of 200 instead). The suite's load test (tests/e2e/test_load.py) runs
the same with its goals as asserts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from dataclasses import dataclass

from tools.lecture import lecture_on_replicas
from tools.server import free_port, health_seconds, start_server, stop_server, wait_healthy
from tools.sessions import HEAVY_LESSON, HEAVY_RUN, SMALL_RUN, Heard, resident_mib, say_seconds, session, wait_quiet


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
            f"a new visitor's cached default page: first chart after {say_seconds(self.visitor.chart)}",
            f"health check: {say_seconds(self.health)}",
            f"a small new run: its page finished after {say_seconds(self.small.finished)}"
            f"{' (told the server is busy)' if self.small.busy else ''}",
            f"server + workers resident: {self.rss_before:.0f} MiB before, {self.rss_peak:.0f} MiB at most",
        ]


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
            print(f"idle: the first visitor's default page: first chart after {say_seconds(first.chart)}; "
                  f"the next visitor's (cached): {say_seconds(idle.chart)}")
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
