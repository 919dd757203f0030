"""What the page keeps between reruns: the server's run cache, its gate for
heavy jobs and its drawing permits, and a run with its progress bar."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TypeVar

import streamlit as st

# The page's one private import: a heavy job's owner is its session, which
# Streamlit 1.67 names nowhere public (st.context has no id; a key in
# st.session_state would be listed among the widgets').
from streamlit.runtime.scriptrunner import get_script_run_ctx

import fitlab
from fitlab import Config
from fitlab.run import Run
from fitlab.serving.budget import run_seconds
from fitlab.serving.cache import RunCache
from fitlab.serving.jobs import JobGate, Permits, Place, Replaced, ServerBusy

HEAVY_AT_ONCE = 2  # server-wide: one per core of the 2-core machine; more only make each slower
HEAVY_WAITING = 32  # sessions that may wait for a slot; one more is told the server is busy
DRAWING_AT_ONCE = 2  # page runs drawing at once, server-wide (a heavy job's wait and run do not count)
T = TypeVar("T")
_held = threading.local()  # the drawing permit this thread's page run holds, if any


@st.cache_resource
def run_cache() -> RunCache:
    """The server's one run cache, shared by every session: a width-256 run
    is about 10 MiB, so a replica keeps a dozen of them."""
    return RunCache(max_entries=64, max_bytes=128 * 2**20)


@st.cache_resource
def job_gate() -> JobGate:
    """The server's one gate for heavy jobs, shared by every session."""
    return JobGate(slots=HEAVY_AT_ONCE, max_waiting=HEAVY_WAITING)


@st.cache_resource
def draw_gate() -> Permits:
    """The server's permits to draw a page, shared by every session."""
    return Permits(DRAWING_AT_ONCE)


@contextmanager
def drawing() -> Iterator[None]:
    """Hold one of the server's few drawing permits for a page run.

    Every message a page run sends, and the event loop's start of each
    session, take Streamlit's one config lock (`get_option`). Forty page
    runs drawing at once queue on it, the event loop among them, and nobody
    hears anything for seconds; with a few drawing at once the others wait
    off the lock, in arrival order (Permits)."""
    gate = draw_gate()
    gate.acquire()
    _held.gate, _held.after_job = gate, False
    try:
        yield
    finally:
        _held.gate = None
        gate.release()


def let_others_draw() -> None:
    """Before building a fresh run's message (a table, a chart): a page run
    back from a heavy job lets the page runs without one draw first
    (Permits.step_aside). Call it outside a cached build: st.cache_resource
    holds its key's lock while it builds, and a run waiting for a permit
    there blocks every run that wants the same key while they hold theirs."""
    gate = getattr(_held, "gate", None)
    if gate is not None and getattr(_held, "after_job", False):
        gate.step_aside()


@contextmanager
def _not_drawing() -> Iterator[None]:
    """Give this page run's drawing permit back for the `with` block (a
    heavy job's wait and run), and take one again after: behind the page
    runs without a job if a heavy job ran in the block (Permits)."""
    gate = getattr(_held, "gate", None)
    if gate is None:
        yield
        return
    _held.gate, _held.job_ran = None, False
    gate.release()
    try:
        yield
    finally:
        gate.acquire(after_job=_held.job_ran)
        _held.gate, _held.after_job = gate, _held.job_ran


def waiting_in_line(what: str, place: Place, slots: int) -> str:
    """Plain text: a job waiting for a free slot, and its place in line."""
    others = place.running + place.ahead
    return (f"Waiting to start {what}: the server runs {slots} at once, and "
            f"{others} other {'job is' if others == 1 else 'jobs are'} before yours "
            f"({place.running} running, {place.ahead} waiting ahead of you).")


def heavy(what: str, func: Callable[..., T], *args, estimate: float, **kwargs) -> T:
    """func(*args, **kwargs) as one of the server's few heavy jobs at once,
    `estimate` its expected seconds (fitlab.serving.budget), `what` naming it
    ("the training"). While it waits for a slot the page gives its place in
    line; a full line, or a newer job of the session, stops this page run.
    Never nest it: a job holding a slot that waits for another could wait for ever."""
    note = None

    def waiting(place) -> None:
        nonlocal note
        note = note or st.empty()
        note.info(waiting_in_line(what, place, HEAVY_AT_ONCE), icon="⏳")

    ctx = get_script_run_ctx()
    try:
        with _not_drawing(), job_gate().slot(on_wait=waiting, owner=None if ctx is None else ctx.session_id,
                                             estimate=estimate):
            if note is not None:
                note.empty()
            _held.job_ran = True  # read by the _not_drawing that gave the permit back
            return func(*args, **kwargs)
    except ServerBusy as busy:
        st.warning(f"The server is too busy to start {what} now: {busy.waiting} jobs are already "
                   "waiting. Try again in a minute; your settings stay in the address bar.")
        st.stop()
    except Replaced:  # this session asked for something newer, which waits in its place
        st.stop()


def replay_seconds(config: Config) -> float:
    """The expected seconds of a replay of the lesson's run: it fails at its
    first backward() (its labels stay attached, detach or not), so one
    epoch's worth at most."""
    return run_seconds(replace(config, detach=False))


def run_with_progress(config: Config) -> Run:
    """The run for `config`, from the cache or trained (a heavy job) with a
    progress bar, which says where it stopped if the person stops it (ui/browser.py)."""
    # One key per config: a page run can train two (the tied and untied comparison).
    bar = st.container(key=f"training_progress_{abs(hash(config))}").empty()
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = 100 * done // total
        if percent != shown[0]:  # one message per percent, not per epoch
            shown[0] = percent
            bar.progress(percent, text=f"Training: epoch {done} of {total}")

    run = run_cache().peek(config)
    if run is None:
        # No permit while the run is trained or awaited: the page runs that
        # wait for another's training of the same config would otherwise hold
        # every permit, and the trainer, done, wait for one of them for ever.
        with _not_drawing():
            run = run_cache().get(config, lambda c: heavy("the training", fitlab.train, c, progress=progress,
                                                          estimate=run_seconds(c)))
    bar.empty()
    return run

