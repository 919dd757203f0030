"""python -m tools.bench_page: what a cached page run costs the server.

A class on one link: the run is trained once, and every student's page run
then only draws it. This starts `streamlit run streamlit_app.py` and, as
the baseline in the same benchmark, the floor page (tools/floor_page.py: a
page that imports torch and draws one Altair chart), trains the link once,
waits for the server to go idle, then counts the server process's CPU
seconds (/proc: the interpreter's threads, the event loop's marshalling
included; other processes on a shared machine do not count) over `--pages`
sessions one after another, and over `--crowd` sessions at once, and
prints the CPU per page and its ratio to the floor's, and the first chart's
median wait over the sessions one at a time (from the page's request to
its first chart's message). `--before DIR` measures the page of another
checkout too (say, `git archive` of the commit before a change), in turn
with this one and the floor, `--rounds` times, and prints medians.

    python -m tools.bench_page [--link "width=12&lr=0.05&seed=7&epochs=300"] [--pages 10] [--crowd 40]
                               [--before DIR --rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
from pathlib import Path

from tools.server import ROOT, free_port, start_server, stop_server, wait_healthy
from tools.sessions import Heard, cpu_seconds, session, wait_quiet

LINK = "width=12&lr=0.05&seed=7&epochs=300"  # the link: not trained by the warm-up


async def pages(ws_url: str, link: str, count: int, at_once: bool) -> list[Heard]:
    """`count` sessions on `link`, each until its page run has finished."""
    heard = [Heard(link) for _ in range(count)]
    if at_once:
        await asyncio.gather(*(session(ws_url, link, h) for h in heard))
    else:
        for h in heard:
            await session(ws_url, link, h)
    return heard


def cost(pid: int, ws_url: str, link: str, count: int, at_once: bool) -> tuple[float, list[Heard]]:
    """Server CPU seconds per page over `count` pages, and what each session heard."""
    before = cpu_seconds(pid)
    heard = asyncio.run(pages(ws_url, link, count, at_once))
    return (cpu_seconds(pid) - before) / count, heard


def measure(script: str, link: str, count: int, crowd: int, *options: str,
            root: Path = ROOT) -> tuple[float, float, float, float]:
    """(CPU per page one at a time, CPU per page `crowd` at once, the
    crowd's last chart in seconds, the median first chart one at a time in
    seconds), the server of the checkout `root` started with `options`."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    ws_url = f"ws://127.0.0.1:{port}/_stcore/stream"
    with open(os.devnull, "w") as log:
        server = start_server(port, log, *options, script=script, root=root)
        try:
            wait_healthy(url, server)
            asyncio.run(session(ws_url, link, Heard(link)))  # trains it (fitlab), imports (both)
            # fitlab's warm-up goes on after a first page, waits for its worker process to start, then
            # goes on in the server: quiet counted over the server and its workers, else its rest fell
            # into the pages measured (10-15 ms a page, docs/measurements/robustness.md)
            wait_quiet(server.pid, quiet=0.02, seconds=2.0, patience=120)
            asyncio.run(session(ws_url, link, Heard(link)))  # a first cached view builds the views
            one, alone = cost(server.pid, ws_url, link, count, False)
            many, heard = cost(server.pid, ws_url, link, crowd, True)
        finally:
            stop_server(server, 30)
    return (one, many, max(h.chart or float("nan") for h in heard),
            statistics.median(h.chart or float("nan") for h in alone))


def compare(before: Path, link: str, count: int, crowd: int, rounds: int) -> None:
    """The page of checkout `before`, this one's and the floor, in turn,
    `rounds` times: medians, and this page's ratios to both."""
    runs = {"before": [], "now": [], "floor": []}
    for _ in range(rounds):
        runs["before"].append(measure("streamlit_app.py", link, count, crowd, root=before))
        runs["now"].append(measure("streamlit_app.py", link, count, crowd))
        runs["floor"].append(measure("tools/floor_page.py", "", count, crowd))
    medians = {name: [statistics.median(r[i] for r in found) for i in range(4)] for name, found in runs.items()}
    for name, (one, many, _, chart) in medians.items():
        print(f"{name}: {1000 * one:.1f} ms of server CPU a page one at a time, {1000 * many:.1f} ms with "
              f"{crowd} at once, first chart {1000 * chart:.0f} ms (medians of {rounds})")
    for name in ("before", "floor"):
        one, many, _, chart = medians[name]
        now = medians["now"]
        print(f"ratio now / {name}: CPU {now[0] / one:.2f} one at a time, {now[1] / many:.2f} {crowd} at once; "
              f"first chart {now[3] / chart:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--link", default=LINK)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--crowd", type=int, default=40)
    parser.add_argument("--before", type=Path, help="another checkout of the page, measured in turn with this one")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.before is not None:
        compare(args.before.resolve(), args.link, args.pages, args.crowd, args.rounds)
        return
    page = measure("streamlit_app.py", args.link, args.pages, args.crowd)
    floor = measure("tools/floor_page.py", "", args.pages, args.crowd)
    # Streamlit's default, off in .streamlit/config.toml: a full collection after every page run.
    collected = measure("streamlit_app.py", args.link, args.pages, args.crowd, "--runner.postScriptGC", "true")
    for name, (one, many, last, _) in (("fitlab's cached page", page), ("the floor page", floor),
                                       ("fitlab's, collecting after every run", collected)):
        print(f"{name}: {1000 * one:.0f} ms of server CPU a page one at a time, {1000 * many:.0f} ms "
              f"with {args.crowd} at once (the last chart after {last:.2f} s)")
    for name, (one, many, _, _) in (("floor", floor), ("collecting after every run", collected)):
        print(f"ratio fitlab / {name}: {page[0] / one:.2f} one at a time, {page[1] / many:.2f} "
              f"{args.crowd} at once")


if __name__ == "__main__":
    main()
