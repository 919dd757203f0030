"""Bare websocket sessions on a fitlab server, and what each hears back,
when; the server's processes' memory and CPU (/proc).

A session here is what a browser tab is to the server: a websocket on
`/_stcore/stream` speaking Streamlit's protobuf messages (a BackMsg asking
for a script run with the page's query string; ForwardMsgs back: the
page's elements, then `script_finished`). No browser draws anything, so the
times are the server's alone. tools/load.py and tools/lecture.py drive them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tools.server import tree_pids
from ui.warmup import LESSON_AFTER_PAGE_SECONDS

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
    bars       how many progress bars were drawn (a bar's every update is one)
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
    bars: int = 0
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
        await ask(ws, heard, lambda h: getattr(h, until) is not None, query=query, stop=stop)
        if stop is not None:
            await stop.wait()
    return heard


async def ask(ws, heard: Heard, done=lambda h: h.finished is not None, query: str | None = None,
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
        elif which == "progress":
            heard.progress = heard.progress if heard.progress is not None else now
            heard.bars += 1
        elif which == "alert" and element.alert.body.startswith("Waiting to start"):
            heard.waiting = heard.waiting if heard.waiting is not None else now
            placed = True
        elif which == "alert" and "too busy" in element.alert.body:
            heard.busy = True
    if placed or heard.in_line:
        heard.silence = max(heard.silence or 0.0, now - (heard.latest or 0.0))
    heard.latest, heard.in_line = now, placed


def say_seconds(seconds: float | None) -> str:
    """Seconds as the figures print them (None: never)."""
    return "never" if seconds is None else f"{seconds:.2f} s"


def apart(func: Callable, *args):
    """func(*args) in a thread of its own, its result returned: there asyncio.run works even
    where this thread runs an event loop (a browser test's worker keeps Playwright's in it)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(func, *args).result()
