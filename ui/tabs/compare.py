"""The Compare runs tab: the session's runs overlaid, and their CSVs."""

from __future__ import annotations

import streamlit as st

import fitlab
from fitlab.blog import task_differences
from fitlab.compare import STEP_SETTLE, RunLog, final_scores, parameters_csv, runs_csv
from fitlab.config import Config
from fitlab.figures.charts import overlay_chart
from fitlab.figures.tables import download_name
from fitlab.run import Run
from ui.charts import draw
from ui.sidebar import slid_settings
from ui.state import run_cache
from ui.words import FIELD_LABELS

PICKED, PINNED = "compare_picked", "compare_pinned"


def run_log() -> RunLog:
    """This session's run log, made on first use: a slider's steps passed
    through with the arrow keys are not kept, only where it stopped and each
    value on screen STEP_SETTLE seconds or more; every other change (a number
    box's + click or arrow key, a ticked box) is a run of its own, however quick."""
    if "run_log" not in st.session_state:
        st.session_state["run_log"] = RunLog(settle=STEP_SETTLE, passing=slid_settings())
    return st.session_state["run_log"]


def remember(run: Run, started: float) -> None:
    """Log `run`, asked for at `started` (time.monotonic(), the page run's
    start); a run made for the first time joins the overlay."""
    log = run_log()
    known = {r.label for r in log.runs}
    entry = log.add(run, now=started)
    kept = {r.label for r in log.runs}
    picked = [label for label in st.session_state.get(PICKED, []) if label in kept]
    if entry.label not in known:
        picked.append(entry.label)
    st.session_state[PICKED] = picked
    st.session_state[PINNED] = [r.label for r in log.runs if r.number in log.pinned]


def remembered_run_shown() -> None:
    """The page has drawn the remembered run whole: from now the person is looking at it."""
    run_log().shown()


def _pin() -> None:
    run_log().pin(st.session_state[PINNED])


def _clear() -> None:
    """Drop the unpinned runs but the current one; the picks follow on the rerun (remember)."""
    run_log().clear()


def compare_section(shown: bool = True) -> None:
    """Pick runs of this session and overlay their losses; download them.

    With `shown` False (a tab not on screen) nothing is drawn; the picks and
    options survive (the widgets' persist_state)."""
    if not shown:
        return
    log = run_log()
    if not log.runs:
        return  # settings invalid before anything ran: nothing to compare yet
    st.header("Compare runs")
    st.caption(f"Every run of this session, one entry per setting (the last {log.limit}; "
               "past that the oldest unpinned run goes first), named by the settings that "
               "differ from the defaults. They come from the training cache: nothing trains again. "
               f"A slider stepped with the arrow keys logs where it stopped and every value on screen for "
               f"{STEP_SETTLE:g} s or more, not each step on the way; every other change (a number box's "
               "+ click or arrow key, a ticked box) is a run of its own, however quick.")
    if log.dropped:
        st.caption(f"Dropped from the log, oldest first: {', '.join(log.dropped)}. It keeps the last "
                   f"{log.limit} runs; pin a run to keep it.")
    labels = st.multiselect("Runs to overlay", [r.label for r in log.runs], key=PICKED, persist_state="page")
    pins, clear = st.columns([3, 1], vertical_alignment="bottom")
    pins.multiselect("Pinned runs", [r.label for r in log.runs], key=PINNED, on_change=_pin, persist_state="page",
                     help="A pinned run stays in the log when it is full or cleared.")
    clear.button("Clear the unpinned runs", key="compare_clear", on_click=_clear,
                 help="Keeps the pinned runs and the one on screen.")
    picked = log.find(labels)
    if not picked:
        st.info("Pick one or more runs to overlay.")
        return
    left, right = st.columns([3, 1])
    weight = left.slider("Smoothing", 0.0, 0.99, 0.0, step=0.01, key="compare_smoothing", persist_state="page",
                         help="Exponential moving average weight; the tooltip keeps the raw value.")
    # On by default, as on the Training tab: on a linear axis every curve hugs zero.
    log_scale = right.toggle("Log scale", value=True, key="compare_log_scale", persist_state="page")
    draw(overlay_chart, (tuple((r.label, r.config) for r in picked), weight, log_scale),
         picked, weight, log_scale)
    st.caption("Each run its own colour; solid: train loss, dashed: test loss.")
    differ = task_differences([r.config for r in picked])
    if differ:
        named = " and ".join(FIELD_LABELS[f] for f in differ)
        verb = "differs" if len(differ) == 1 else "differ"
        st.info(f"**These runs learn different teachers**: {named} {verb}, and each draws its own teacher "
                "and data (the same net makes the labels), so one run may score better because its task is "
                "easier. Compare runs of one teacher, or read the R² rather than the losses.", icon="ℹ️")
    st.dataframe(picked_scores(tuple((r.label, r.config) for r in picked)), hide_index=True, key="compare_scores",
                 column_config={c: st.column_config.NumberColumn(format="%.4g") for c in SCORE_COLUMNS})
    st.caption("Each picked run's final losses and R² (1 is a perfect fit, 0 as good as the labels' "
               "mean, below 0 worse); click a column's name to sort by it.")
    left, right = st.columns(2)
    left.download_button("Download the picked runs' losses (CSV)", data=runs_csv(picked),
                         file_name=_file_name("runs", picked), mime="text/csv", key="download_runs",
                         on_click="ignore")
    right.download_button(
        "Download their parameters (CSV)", file_name=_file_name("parameters", picked), mime="text/csv",
        key="download_parameters", on_click="ignore",
        data=picked_parameters_csv(tuple((r.label, r.config) for r in picked)))



def _file_name(what: str, picked: list) -> str:
    """A comparison's file name: how many runs, and the settings they differ in."""
    differ = [f for f in picked[0].config.as_dict() if len({r.config.as_dict()[f] for r in picked}) > 1]
    return download_name(what, None, f"{len(picked)}runs", *(["by", *differ] if differ else []))


SCORE_COLUMNS = ("final train MSE", "final test MSE", "train R²", "test R²")


@st.cache_data(max_entries=16, show_spinner=False)
def picked_scores(picked: tuple[tuple[str, Config], ...]):
    """The picked runs' final losses and R², a row each."""
    return final_scores([(label, run_cache().get(config, fitlab.train)) for label, config in picked])


@st.cache_data(max_entries=16, show_spinner=False)
def picked_parameters_csv(picked: tuple[tuple[str, Config], ...]) -> str:
    """The picked runs' parameters as CSV, built before the button is drawn:
    a file built lazily (data=callable) is kept only until the next rerun,
    so a second quick click got "Deferred file … not found" and nothing. The
    page's download buttons do not rerun it either (on_click="ignore"): a
    rerun replaces the files a click may still be fetching."""
    return parameters_csv([(label, run_cache().get(config, fitlab.train)) for label, config in picked])
