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
from dataclasses import replace
from typing import TypeVar

import streamlit as st

# The one private import of the page's plumbing: a heavy job's owner is its
# session, and Streamlit 1.67 names a session nowhere public (st.context has
# headers, cookies, url...: no id; a key in st.session_state would be listed
# among the widgets' and is absent outside a page run).
from streamlit.runtime.scriptrunner import get_script_run_ctx

import fitlab
from fitlab import Config
from fitlab.run import Run
from fitlab.serving.budget import run_seconds
from fitlab.serving.cache import RunCache
from fitlab.serving.jobs import JobGate, Place, Replaced, ServerBusy

# Heavy jobs at once, server-wide: one per core of the 2-core machine it was
# measured on; more only make each slower (fitlab/serving/jobs.py).
HEAVY_AT_ONCE = 2
# Sessions that may wait for a slot; one more is told the server is busy.
HEAVY_WAITING = 32
T = TypeVar("T")


@st.cache_resource
def run_cache() -> RunCache:
    """The server's one run cache, shared by every session: a width-256 run
    is about 10 MiB, so a replica keeps a dozen of them."""
    return RunCache(max_entries=64, max_bytes=128 * 2**20)


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


def heavy(what: str, func: Callable[..., T], *args, estimate: float, **kwargs) -> T:
    """func(*args, **kwargs) as one of the server's few heavy jobs at once
    (training, a sweep, a fix, a replay), `estimate` its expected seconds
    (fitlab.serving.budget): while it waits for a slot, the page says so and gives
    its place in line, `what` naming the job ("the training"). A session has
    one job in line: a newer one takes its place. If the line is full the
    page says the server is busy and this run of the page stops there. Never
    nest it: a job holding a slot that waits for another could wait for ever."""
    note = None

    def waiting(place) -> None:
        nonlocal note
        note = note or st.empty()
        note.info(waiting_in_line(what, place, HEAVY_AT_ONCE), icon="⏳")

    ctx = get_script_run_ctx()
    try:
        with job_gate().slot(on_wait=waiting, owner=None if ctx is None else ctx.session_id, estimate=estimate):
            if note is not None:
                note.empty()
            return func(*args, **kwargs)
    except ServerBusy as busy:
        st.warning(server_busy(what, busy))
        st.stop()
    except Replaced:  # this session asked for something newer, which waits in its place
        st.stop()


def replay_seconds(config: Config) -> float:
    """The expected seconds of a replay of the lesson's run: it fails at its
    first backward() (its labels stay attached, detach or not), so one
    epoch's worth at most."""
    return run_seconds(replace(config, detach=False))


# Streamlit's Stop ends the script where it is, and the page keeps what it
# drew, so the server cannot say anything after it: the browser rewrites a
# training bar left on an idle page (a finished run removes its bar).
STOPPED = """<script>
(() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (window.fitlabStopWatch) window.fitlabStopWatch.disconnect();
  const stopped = () => {
    if (app.getAttribute('data-test-script-state') !== 'notRunning') return;
    for (const text of document.querySelectorAll('[class*="st-key-training_progress"] [data-testid="stProgress"] p')) {
      const at = /^Training: epoch (\\d+) of (\\d+)$/.exec(text.textContent);
      if (at) text.textContent = 'Stopped at epoch ' + at[1] + ' of ' + at[2] + '. A stopped run is not kept: '
        + 'rerun the page (R) to train it again, or lower Epochs (Advanced) for a shorter run.';
    }
  };
  window.fitlabStopWatch = new MutationObserver(stopped);
  window.fitlabStopWatch.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
})();
</script>"""


def run_with_progress(config: Config) -> Run:
    """The run for `config`, from the cache or trained (a heavy job) with a
    progress bar, which says where it stopped if the person stops it."""
    # One key per config: a page run can train two (the tied and untied comparison).
    place = st.container(key=f"training_progress_{abs(hash(config))}")
    bar = place.empty()
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = 100 * done // total
        if percent != shown[0]:  # one message per percent, not per epoch
            shown[0] = percent
            bar.progress(percent, text=f"Training: epoch {done} of {total}")

    def trained(c: Config) -> Run:
        place.html(STOPPED, unsafe_allow_javascript=True)
        return heavy("the training", fitlab.train, c, progress=progress, estimate=run_seconds(c))

    run = run_cache().get(config, trained)
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
