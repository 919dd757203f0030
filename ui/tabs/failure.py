"""The lesson (detach off): torch's own message, what went wrong, the fix;
then the failure explained like a debugger would. Every number shown comes
from a real replay."""

from __future__ import annotations

import streamlit as st

from fitlab import Config
from fitlab.explain import format_report
from fitlab.failure.autopsy import Autopsy, autopsy
from fitlab.failure.explained import SCRIPT_NAME, ExplainedBlog, explained_blog
from fitlab.failure.fixes import VARIANTS, FixOutcome, gallery_config, run_variant
from fitlab.failure.graph import graph_dot, named_in_error
from fitlab.failure.versions import MOMENTS
from fitlab.failure.vivid import VividCase, vivid_example
from fitlab.isolation import WorkerDied, run_isolated
from fitlab.run import Run
from ui.phone import stacked_table_style
from ui.state import heavy
from ui.text import (
    FIX_CODE,
    GRAD_MODE_NOTE,
    error_explanation,
    gallery_messages,
    gallery_table,
    marked_script,
    script_anomaly_intro,
    script_anomaly_missing,
    script_did_not_fail,
    script_gallery_note,
    script_graph_note,
    script_intro,
    script_ledger_note,
    script_replay_failed,
    script_story,
    vivid_note,
    vivid_table,
    wording_note,
)

_STALE_ROW = "background-color: #fde0e0"
# Seconds the anomaly replay may take in its worker: one forward and backward
# pass, well under a second at the page's largest settings.
REPLAY_TIMEOUT = 60


def error_panel(run: Run) -> None:
    """The lesson: torch's real message, what went wrong, and the fix."""
    err = run.error
    st.error(f"**`loss.backward()` raised {err.type}** at epoch {err.epoch}, batch {err.batch}. "
             f"Torch's own message:\n\n`{err.message}`")
    found = cached_autopsy(run.config)
    wording = wording_note(err.message, found.torch_version)
    if wording is not None:
        st.caption(wording)
    st.markdown(error_explanation(run, found))
    st.code(FIX_CODE, language="python")


@st.cache_data(max_entries=32, show_spinner="Replaying the failure…")
def cached_autopsy(config: Config) -> Autopsy:
    """autopsy(config), once per config."""
    return heavy("the replay", autopsy, config)


@st.cache_data(max_entries=32, show_spinner="Running the blog's script…")
def cached_explained(config: Config) -> ExplainedBlog:
    """explained_blog(config), once per config, in a worker process: running
    a script as __main__ and anomaly mode would change other sessions' runs here."""
    return heavy("the blog's script", run_isolated, explained_blog, config, timeout=REPLAY_TIMEOUT)


@st.cache_data(max_entries=32, show_spinner="Running the blog's vivid example…")
def cached_vivid_example(config: Config) -> tuple[VividCase, ...]:
    """vivid_example(config), once per config."""
    return vivid_example(config)


@st.cache_data(max_entries=16 * len(VARIANTS), show_spinner=False)
def cached_outcome(config: Config, variant: int) -> FixOutcome:
    """run_variant(config, VARIANTS[variant]), once per config and variant."""
    return heavy("the fix gallery", run_variant, config, VARIANTS[variant])


def gallery_with_progress(config: Config) -> tuple[FixOutcome, ...]:
    """The fix gallery's outcomes, each from the cache or trained under a progress bar."""
    bar = st.progress(0, text="Running every fix for real…")
    outcomes = []
    for i, variant in enumerate(VARIANTS):
        bar.progress(i / len(VARIANTS), text=f"Running the fixes for real: {variant.name}")
        outcomes.append(cached_outcome(config, i))
    bar.empty()
    return tuple(outcomes)


def blog_script_section(config: Config) -> ExplainedBlog | None:
    """The blog's script with the user's numbers, run in the worker through
    fitlab.explain: shown with line numbers, the three lines it points at
    marked, the report and the fix. Returns what ran, for the sections below
    to point into, or None if the worker could not run it."""
    st.header("The blog's script, run for real")
    try:
        explained = cached_explained(config)
    except (TimeoutError, WorkerDied) as exc:  # not cached: the next view tries again
        st.warning(script_replay_failed(exc))
        return None
    report = explained.report
    if report.status != "inplace_error" or not explained.marks:
        st.markdown(script_did_not_fail(explained))
        if report.traceback:
            st.code(report.traceback, language="text")
        st.code(explained.script, language="python", line_numbers=True, wrap_lines=True)
        return explained
    st.markdown(script_intro(explained))
    st.code(marked_script(explained), language="python", line_numbers=True, wrap_lines=True)
    st.markdown(script_story(explained))
    st.caption(f"What `python -m fitlab.explain {SCRIPT_NAME}` prints:")
    st.code(format_report(report), language="text", wrap_lines=True)
    with st.expander("What the script printed before it failed"):
        st.code(explained.printed or "(nothing)", language="text")
    return explained


def _script_note(words, explained: ExplainedBlog | None) -> None:
    text = words(explained) if explained is not None else None
    if text:
        st.caption(text)


def failure_diagnosis(config: Config) -> None:
    """The blog's script, explained; then sections 1–5: version ledger, the
    labels' graph, the anomaly trace, the fix gallery, the blog's vivid
    example, each citing the script's lines."""
    explained = blog_script_section(config)
    st.header("Inside the failure")
    st.caption("Five views of the same failure, each replayed from your settings.")
    found = cached_autopsy(config)
    version_ledger_section(found)
    _script_note(script_ledger_note, explained)
    graph_section(found)
    _script_note(script_graph_note, explained)
    script_anomaly_section(explained)
    gallery_section(config)
    _script_note(script_gallery_note, explained)
    vivid_section(cached_vivid_example(config))


def version_ledger_section(found: Autopsy) -> None:
    """1. Each parameter's version counter at three moments, stale rows red."""
    st.subheader("1. Version ledger")
    ledger = found.ledger
    stale = ledger[ledger.stale]
    saved = ledger[ledger["saved by the labels' graph"] != "not saved"]
    unsaved = ledger.parameter[~ledger.parameter.isin(saved.parameter)]
    st.markdown(
        "Every in-place write bumps a tensor's **version counter**; a tensor saved for "
        "backward remembers the version it was saved at. Here is each parameter's counter "
        f"{', '.join(MOMENTS[:-1])} and {MOMENTS[-1]}. The labels' graph saved "
        f"**{len(saved)}** of {len(ledger)} parameters; **{len(stale)}** of them are stale "
        f"(red): {', '.join(f'`{p}`' for p in stale.parameter) or 'none'}. "
        f"The others ({', '.join(f'`{p}`' for p in unsaved) or 'none'}) were never saved: "
        "a bias is not needed to differentiate a product, and the first layer's weight only "
        "for a gradient of X, which needs none. Their new versions do no harm.")
    styled = ledger.style.apply(lambda row: [_STALE_ROW if row.stale else ""] * len(row), axis=1)
    st.table(styled.hide(axis="index"))


def graph_section(found: Autopsy) -> None:
    """2. The labels' autograd graph, stale saved tensors in red."""
    st.subheader("2. The labels' autograd graph")
    graph = found.graph
    culprit = named_in_error(graph, found.error or "")
    st.markdown(
        "Backward walks from the top down. Boxes are grad_fn nodes, listing the activations "
        "they saved; green ovals are the parameters (the shared weight is **one** oval with an "
        "edge per use); notes beside a node are the parameters it saved. Each saved tensor "
        "shows its shape, current version and the version it was saved at. "
        f"**{len(graph.stale)}** of {len(graph.saved)} saved tensors are stale (red)."
        + (f" The first one backward meets is `{culprit.name}` = `{culprit.parameter}`, "
           f"saved as `{list(culprit.shape)}` (the transposed view `F.linear` multiplies by): "
           "the tensor torch's message names."
           if culprit is not None and culprit.parameter else ""))
    st.graphviz_chart(graph_dot(graph))
    st.caption("Read without tripping the check: via `node._raw_saved_<name>.data`, since "
               "`node._saved_<name>` raises this very error. A red note's last line is the saved "
               "view's own `grad_fn` when saved → now. No saved-tensor hooks: with hooks installed "
               "torch skips the version check, the first step's gradients come from the "
               "re-initialised weights (wrong), and the blog's loop then fails at batch 2, backward "
               "through the graph the first backward freed; only with `retain_graph=True` would it "
               "go on training on wrong gradients (the gallery runs it).")


def script_anomaly_section(explained: ExplainedBlog | None) -> None:
    """3. What anomaly mode says on the blog's script, and what it does not."""
    st.subheader("3. Anomaly trace")
    st.markdown(GRAD_MODE_NOTE)
    if explained is None or explained.anomaly_node is None:
        st.info(script_anomaly_missing(explained))
        return
    st.markdown(script_anomaly_intro(explained))
    st.code("\n".join(f'File "{SCRIPT_NAME}", line {f.line}, in {f.function}\n    {f.code}'
                      for f in explained.anomaly_frames), language="text")


def gallery_section(config: Config) -> None:
    """4. Every candidate fix, run for real on these settings."""
    st.subheader("4. Fix gallery")
    run_for = gallery_config(config)
    epochs = (f"{config.epochs} epochs" if run_for.epochs == config.epochs else
              f"the first {run_for.epochs} of your {config.epochs} epochs, so that the whole "
              "gallery stays within the work budget of one run")
    st.markdown(
        f"Each variant changes one line of the blog's script and trains for real on your "
        f"settings ({epochs}). The outcome is torch's exception, or the final losses; the "
        "verdict reads **✓** a fix, **✗** no fix, **⚠** runs, with a catch.")
    outcomes = gallery_with_progress(run_for)
    # A static table: the verdicts are sentences, and shown whole; on a
    # phone each variant is a block, its cells one under the other.
    table = gallery_table(outcomes)
    with st.container(key="fix_gallery"):
        stacked_table_style("fix_gallery", list(table.columns))
        st.table(table.style.hide(axis="index"))
    with st.expander("Torch's messages in full"):
        for message in gallery_messages(outcomes):
            st.code(message, language="text", wrap_lines=True)


def vivid_section(cases: tuple[VividCase, ...]) -> None:
    """5. The blog's "more vivid example", run on this net and on one ending in ReLU."""
    st.subheader("5. The blog's “more vivid example”, run")
    st.markdown(vivid_note(cases))
    st.table(vivid_table(cases).style.hide(axis="index"))
