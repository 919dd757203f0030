"""The lesson (detach off): torch's own message, what went wrong, the fix;
then the failure explained like a debugger would. Every number shown comes
from a real replay."""

from __future__ import annotations

import streamlit as st

from fitlab import Config
from fitlab.failure.anomaly import AnomalyTrace, anomaly_trace
from fitlab.failure.autopsy import Autopsy, autopsy
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
    replay_failed,
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


@st.cache_data(max_entries=32, show_spinner="Replaying under anomaly mode…")
def cached_anomaly_trace(config: Config) -> AnomalyTrace | None:
    """anomaly_trace(config), once per config, in a worker process: anomaly
    mode is process-wide, and would change other sessions' runs here."""
    return heavy("the anomaly replay", run_isolated, anomaly_trace, config, timeout=REPLAY_TIMEOUT)


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


def failure_diagnosis(config: Config) -> None:
    """Sections 1–5 under the error panel: version ledger, the labels'
    graph, the anomaly trace, the fix gallery, the blog's vivid example."""
    st.header("Inside the failure")
    st.caption("Five views of the same failure, each replayed from your settings.")
    found = cached_autopsy(config)
    version_ledger_section(found)
    graph_section(found)
    try:
        trace = cached_anomaly_trace(config)
    except (TimeoutError, WorkerDied) as exc:  # not cached: the next view tries again
        st.subheader("3. Anomaly trace")
        st.warning(replay_failed(exc))
    else:
        anomaly_section(trace)
    gallery_section(config)
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


def anomaly_section(trace: AnomalyTrace | None) -> None:
    """3. The forward traceback anomaly mode attaches, trimmed."""
    st.subheader("3. Anomaly trace")
    st.markdown(GRAD_MODE_NOTE)
    if trace is None:
        st.info("Under anomaly mode this configuration's backward did not fail.")
        return
    st.markdown(
        "Anomaly mode records a stack for each node as the forward pass builds it, so it must be "
        "on **before the teacher's forward pass**. Turned on from the start, torch reports "
        f"`Error detected in {trace.node}` with this forward traceback (trimmed to the frames "
        "that help):")
    st.code("\n".join(f'File "{f.short_file}", line {f.line}, in {f.function}\n    {f.code}'
                      for f in trace.trimmed), language="text")
    label = trace.label_frame
    if label is not None:
        st.markdown(
            f"It points at `{label.code}` in `{label.function}` ({label.short_file}, line "
            f"{label.line}): **the line that computed the labels**, not `loss.backward()` in "
            "the training loop. That matters: the failing backward only *detects* the stale "
            "tensor, but the graph that holds it was built, and the weight saved, when the "
            "labels were made. That line is where the fix goes (`.detach()`).")
    with st.expander("Torch's message under anomaly mode"):
        st.code(trace.error, language="text", wrap_lines=True)  # one long line otherwise


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
