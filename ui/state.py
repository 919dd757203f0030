"""What the page keeps between reruns: the server's run cache, its gate for
heavy jobs, a run with its progress bar, and the widgets of tabs that are
closed.

Every element on the page costs the browser time on every rerun, drawn or
hidden in a closed tab alike, so a closed tab draws nothing. Streamlit
forgets the value of a widget that a run does not draw; a tab's TabKeys
carries its widgets' values over while it is closed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

import fitlab
from fitlab import Config
from fitlab.cache import RunCache
from fitlab.jobs import JobGate, Place, ServerBusy
from fitlab.run import Run

# Heavy jobs at once, server-wide: one per core of the 2-core machine it was
# measured on; more only make each slower (docs/robustness.md).
HEAVY_AT_ONCE = 2
# Sessions that may wait for a slot; one more is told the server is busy.
HEAVY_WAITING = 32
T = TypeVar("T")


@st.cache_resource
def run_cache() -> RunCache:
    """The server's one run cache, shared by every session."""
    return RunCache(max_entries=64, max_bytes=256 * 2**20)


@st.cache_resource
def job_gate() -> JobGate:
    """The server's one gate for heavy jobs, shared by every session."""
    return JobGate(slots=HEAVY_AT_ONCE, max_waiting=HEAVY_WAITING)


def waiting_in_line(what: str, place: Place, slots: int) -> str:
    """Plain text: a job waiting for a free slot, and its place in line."""
    others = place.running + place.ahead
    return (f"Waiting to start {what}: the server runs {slots} at once, and "
            f"{others} other {'job is' if others == 1 else 'jobs are'} before yours "
            f"({place.running} running, {place.ahead} waiting ahead of you).")


def server_busy(what: str, busy: ServerBusy) -> str:
    """Plain text: a job turned away because the line is full."""
    return (f"The server is too busy to start {what} now: {busy.waiting} jobs are already "
            "waiting. Try again in a minute; your settings stay in the address bar.")


def heavy(what: str, func: Callable[..., T], *args, **kwargs) -> T:
    """func(*args, **kwargs) as one of the server's few heavy jobs at once
    (training, a sweep, a fix, a replay): while it waits for a slot, the page
    says so and gives its place in line, `what` naming the job ("the
    training"). If the line is full the page says the server is busy and
    this run of the page stops there. Never nest it: a job holding a slot
    that waits for another could wait for ever."""
    note = None

    def waiting(place) -> None:
        nonlocal note
        note = note or st.empty()
        note.info(waiting_in_line(what, place, HEAVY_AT_ONCE), icon="⏳")

    try:
        with job_gate().slot(on_wait=waiting):
            if note is not None:
                note.empty()
            return func(*args, **kwargs)
    except ServerBusy as busy:
        st.warning(server_busy(what, busy))
        st.stop()


def run_with_progress(config: Config) -> Run:
    """The run for `config`, from the cache or trained (a heavy job) with a
    progress bar."""
    bar = st.empty()
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = 100 * done // total
        if percent != shown[0]:  # one message per percent, not per epoch
            shown[0] = percent
            bar.progress(percent, text=f"Training: epoch {done} of {total}")

    run = run_cache().get(config, lambda c: heavy("the training", fitlab.train, c, progress=progress))
    bar.empty()
    return run


class TabKeys:
    """The session-state keys of one tab's widgets: each is named where its
    widget is made (`key=KEYS("smoothing")` gives "compare_smoothing"), and
    `keep()` carries all of them over while the tab is closed. Buttons have
    no value to keep: their keys are not made here (Streamlit refuses a
    button's value set through session state)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._names: set[str] = set()

    def __call__(self, name: str) -> str:
        """The key of the tab's widget or value `name`, remembered for keep()."""
        key = f"{self.prefix}_{name}"
        self._names.add(key)
        return key

    def keep(self) -> None:
        """Keep the values of this tab's widgets, which this run does not draw."""
        for key in self._names:
            if key in st.session_state:
                st.session_state[key] = st.session_state[key]
