"""What the page keeps between reruns: the server's run cache, its gates for
heavy jobs and for page draws, and a run with its progress bar."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import streamlit as st

import fitlab
from fitlab import Config
from fitlab.run import Run
from fitlab.serving.budget import run_seconds
from fitlab.serving.cache import RunCache
from fitlab.serving.jobs import JobGate, Replaced, ServerBusy
from ui.words import waiting_in_line

HEAVY_AT_ONCE = 2  # server-wide: one per core of the 2-core machine; more only make each slower
HEAVY_WAITING = 32  # sessions that may wait for a slot; one more is told the server is busy
DRAWING_AT_ONCE = 2  # page runs drawing at once, server-wide (a heavy job's wait and run do not count)
# A draw's estimate: a cached page's takes tens of ms, a run's first (just trained) seconds.
CACHED_DRAW, FRESH_DRAW = 0.05, 2.0
BAR_INTERVAL = 0.25  # seconds between a bar's redraws at least: one per percent kept a browser's core busy
T = TypeVar("T")
_held = threading.local()  # this thread's page run's draw ticket, while it draws


@st.cache_resource
def run_cache() -> RunCache:
    """The server's one run cache, shared by every session."""
    return RunCache(max_entries=64, max_bytes=128 * 2**20)


@st.cache_resource
def job_gate() -> JobGate:
    """The server's one gate for heavy jobs, shared by every session."""
    return JobGate(slots=HEAVY_AT_ONCE, max_waiting=HEAVY_WAITING)


@st.cache_resource
def draw_gate() -> JobGate:
    """The server's gate for page draws, shared by every session: none is turned away."""
    return JobGate(slots=DRAWING_AT_ONCE, max_waiting=None)


@contextmanager
def drawing() -> Iterator[None]:
    """Hold one of the server's few drawing slots for a page run: with a few
    drawing at once the others wait off Streamlit's config lock (fitlab.serving.jobs)."""
    _held.ticket = draw_gate().acquire(estimate=CACHED_DRAW)
    try:
        yield
    finally:
        _held.ticket = None
        draw_gate().release()


def let_others_draw() -> None:
    """Before building a fresh run's message (a table, a chart): a page run back
    from a heavy job lets cached pages that waited long enough draw first
    (JobGate.step_aside). Call it outside a cached build: a run waiting here
    inside one would hold its key's lock against the runs that hold slots."""
    ticket = getattr(_held, "ticket", None)
    if ticket is not None and ticket.estimate == FRESH_DRAW:
        draw_gate().step_aside(ticket)


@contextmanager
def _not_drawing() -> Iterator[None]:
    """Give this page run's drawing slot back for the `with` block (a heavy job's wait
    and run), and take one again after: as a FRESH_DRAW if a heavy job ran in it."""
    if getattr(_held, "ticket", None) is None:
        yield
        return
    _held.ticket, _held.job_ran = None, False
    draw_gate().release()
    try:
        yield
    finally:
        _held.ticket = draw_gate().acquire(estimate=FRESH_DRAW if _held.job_ran else CACHED_DRAW)


def heavy(what: str, func: Callable[..., T], *args, estimate: float, **kwargs) -> T:
    """func(*args, **kwargs) as one of the server's few heavy jobs at once, `estimate` its
    expected seconds (fitlab.serving.budget), `what` naming it ("the training"). While it
    waits for a slot the page gives its place in line; a full line, or a newer job of the
    session, stops this page run. Never nest it: a job holding a slot could wait for ever."""
    note = None

    def waiting(ahead: int) -> None:
        nonlocal note
        note = note or st.empty()
        note.info(waiting_in_line(what, ahead, HEAVY_AT_ONCE), icon="⏳")

    owner = st.session_state.setdefault("job_owner", object())  # the session's token
    try:
        with _not_drawing(), job_gate().slot(on_wait=waiting, owner=owner, estimate=estimate):
            if note is not None:
                note.empty()
            _held.job_ran = True  # read by the _not_drawing that gave the slot back
            return func(*args, **kwargs)
    except ServerBusy as busy:
        st.warning(f"The server is too busy to start {what} now: {busy.waiting} jobs are already "
                   "waiting. Try again in a minute; your settings stay in the address bar.")
        st.stop()
    except Replaced:  # this session asked for something newer, which waits in its place
        st.stop()


def bar_updates(bar, what: str) -> Callable[[int, int], None]:
    """A progress(done, total) callback drawing `bar` ("{what}: epoch {done} of {total}"):
    its first call at once, then one every BAR_INTERVAL at most."""
    due = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal due
        if (now := time.monotonic()) >= due:
            due = now + BAR_INTERVAL
            bar.progress(done / total, text=f"{what}: epoch {done} of {total}")

    return progress


def run_with_progress(config: Config) -> Run:
    """The run for `config`, from the cache or trained (a heavy job) with a
    progress bar, which says where it stopped if the person stops it (ui/browser.py)."""
    # One key per config: a page run can train two (the tied and untied comparison).
    bar = st.container(key=f"training_progress_{abs(hash(config))}").empty()
    run = run_cache().peek(config)
    if run is None:
        # No drawing slot while the run is trained or awaited: the page runs
        # that wait for another's training of the same config would otherwise
        # hold every slot, and the trainer, done, wait for one of them for ever.
        with _not_drawing():
            run = run_cache().get(config, lambda c: heavy("the training", fitlab.train, c, estimate=run_seconds(c),
                                                          progress=bar_updates(bar, "Training")))
    bar.empty()
    return run

