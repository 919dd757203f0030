"""The failure's views, each replayed from the user's settings and citing the
blog's script: the version ledger, the labels' graph, the anomaly trace, and
the blog's "more vivid example"."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fitlab import Config
from fitlab.explain import decode
from fitlab.explain.decode import freed_graph
from fitlab.failure.autopsy import Autopsy
from fitlab.failure.explained import SCRIPT_NAME, ExplainedBlog
from fitlab.failure.fixes import GRADIENT_TOLERANCE, FixOutcome, unchecked_loop, unchecked_seconds
from fitlab.failure.graph import LabelGraph, graph_dot, named_in_error
from fitlab.failure.vivid import NETS, VividCase, vivid_example
from fitlab.figures.tables import MOMENT_HEADERS, ledger_table
from ui.state import heavy
from ui.tabs.failure.lesson import NEVER_SAVED, code_names
from ui.tabs.failure.script import line_of, marks_of

_STALE_ROW = "background-color: #fde0e0"
# fitlab.failure.vivid.NETS, in words.
NET_NAMES = dict(zip(NETS, ("the blog's net", "the blog's net + a final ReLU"), strict=True))


def version_ledger_section(replay: Autopsy) -> None:
    """1. Each parameter's version counter at three moments, stale rows red."""
    st.subheader("1. Version ledger")
    ledger = ledger_table(replay.ledger)
    st.markdown(ledger_note(replay))
    styled = ledger.style.apply(lambda row: [_STALE_ROW if row.stale else ""] * len(row), axis=1)
    st.table(styled.hide(axis="index"))


def ledger_note(replay: Autopsy) -> str:
    """Markdown over the ledger: what a version counter is, and which of
    this replay's parameters were saved and went stale."""
    ledger = replay.ledger
    stale = ledger[ledger.stale]
    moments = list(MOMENT_HEADERS.values())
    return ("An in-place op on a tensor, such as the re-init's `kaiming_normal_` and `zeros_`, bumps its "
            "**version counter** (a write through `.data` does not); a tensor saved for "
            "backward remembers the version it was saved at. Here is each parameter's counter "
            f"{', '.join(moments[:-1])} and {moments[-1]}. The labels' graph saved "
            f"**{len(replay.saved_parameters)}** of {len(ledger)} parameters; **{len(stale)}** of them are stale "
            f"(red): {code_names(stale.parameter)}. "
            f"The others ({code_names(replay.unsaved_parameters)}) were never saved: {NEVER_SAVED}. "
            "Their new versions do no harm.")


def script_ledger_note(explained: ExplainedBlog) -> str | None:
    """Which script line each of the ledger's three moments is."""
    saved, written = marks_of(explained, "saved", True), marks_of(explained, "written", True)
    failed = marks_of(explained, "failed", False)
    if not (saved and written and failed):
        return None
    return (f"In the script above: *at the teacher's forward* is {line_of(saved[0])}; *after the "
            f"student's re-init* is after {line_of(written[0])}; *at the failing backward* is "
            f"{line_of(failed[0])}.")


def graph_section(replay: Autopsy) -> None:
    """2. The labels' autograd graph, stale saved tensors in red."""
    st.subheader("2. The labels' autograd graph")
    graph = replay.graph
    culprit = named_in_error(graph, replay.error or "")
    st.markdown(
        "Backward walks from the top down. Boxes are grad_fn nodes, listing the activations "
        "they saved; green ovals are the parameters (the shared weight is **one** oval with an "
        "edge per use); notes beside a node are the parameters it saved. Each saved tensor "
        "shows its shape, current version and the version it was saved at. "
        f"**{len(graph.stale)}** of {len(graph.saved)} saved tensors are stale (red)"
        + stale_count_note(graph) + "."
        + (f" The first one backward meets is `{culprit.name}` = `{culprit.parameter}`, "
           f"saved as `{list(culprit.shape)}` (the transposed view `F.linear` multiplies by): "
           "the tensor torch's message names."
           if culprit is not None and culprit.parameter else ""))
    st.graphviz_chart(graph_dot(graph))
    st.caption(READ_RAW)


def stale_count_note(graph: LabelGraph) -> str:
    """Why the graph's count of stale saved tensors can exceed the ledger's
    count of stale parameters: a weight used n times is saved n times."""
    parameters = {t.parameter for t in graph.stale}
    if len(parameters) == len(graph.stale):
        return ""
    return (f": the ledger's **{len(parameters)}** stale parameters, as a shared weight is saved once per use "
            "and the ledger counts it once")


# How the graph above was read, and why not through saved-tensor hooks.
READ_RAW = ("Read without tripping the check: via `node._raw_saved_<name>.data`, since "
            "`node._saved_<name>` raises this very error. A red note's last line is the saved "
            "view's own `grad_fn` when saved → now. No saved-tensor hooks: with hooks installed "
            "torch skips the version check (below, what that does to the blog's loop here).")


def hooks_section(config: Config) -> None:
    """What identity saved-tensor hooks do to the blog's loop at `config`, run for real."""
    st.caption(hooks_note(config, *cached_unchecked_loop(config)))


@st.cache_data(max_entries=32, show_spinner="Running the blog's loop with saved-tensor hooks…")
def cached_unchecked_loop(config: Config) -> tuple[FixOutcome, float | None]:
    """unchecked_loop(config), once per config."""
    return heavy("the hooks' run", unchecked_loop, config, estimate=unchecked_seconds(config))


def hooks_note(config: Config, hooked: FixOutcome, gap: float | None) -> str:
    """Markdown: the blog's loop with identity saved-tensor hooks (no
    version check), as its run at these settings went: whether the first
    step's gradients were right, and whether and where the loop stopped."""
    if gap is None:   # its first backward failed: nothing to compare
        first = "with identity saved-tensor hooks the first backward fails all the same"
    elif gap > GRADIENT_TOLERANCE:
        first = (f"with identity saved-tensor hooks the first step's gradients come from the "
                 f"re-initialised weights: wrong, off by up to {gap:.3g} from `.detach()`'s")
    elif hooked.teacher_gradient is not None:
        first = ("with identity saved-tensor hooks the student's first gradients equal `.detach()`'s "
                 "here: the untied student is a new net, so backward through the labels' graph reaches "
                 f"the teacher's weights instead (gradient norm {hooked.teacher_gradient:.3g})")
    else:
        first = "with identity saved-tensor hooks the student's first gradients equal `.detach()`'s here"
    err = hooked.error
    steps = config.epochs * config.batches_per_epoch
    wrong = gap is not None and gap > GRADIENT_TOLERANCE
    if err is not None and freed_graph(err.message):
        step = (err.epoch - 1) * config.batches_per_epoch + err.batch
        then = (f"then the blog's loop fails at epoch {err.epoch}, batch {err.batch} (step {step}), "
                "backward through the graph the first backward freed; only with `retain_graph=True` "
                "would it train on" + (", on wrong gradients" if wrong else "")
                + " (the *Fix gallery* tab runs it)")
    elif err is not None:
        then = f"the loop stops at epoch {err.epoch}, batch {err.batch}: {err.type}"
    else:
        then = (f"with {steps} step{'s' if steps != 1 else ''} there is no second backward to fail: the loop "
                "trains to the end" + (" on wrong gradients" if wrong else ""))
    return f"At these settings, {first}; {then}."


def script_graph_note(explained: ExplainedBlog) -> str | None:
    """Which script lines built the graph and wrote its stale tensors."""
    saved, written = marks_of(explained, "saved", True), marks_of(explained, "written", False)
    if not (saved and written):
        return None
    return (f"This graph was built by {line_of(saved[0])} in the script above; its red tensors were "
            f"written by {line_of(written[0])}.")


# The blog "enabled" debugging with this; torch's hint means anomaly detection.
GRAD_MODE_NOTE = (
    "The blog says it turned on gradient tracking with `torch.set_grad_enabled(True)` to find "
    "the line. That changes nothing here: gradient recording is already on by default "
    "(`torch.is_grad_enabled()` is `True`), and it does not turn on anomaly detection. The "
    "hint's tool is `torch.autograd.set_detect_anomaly(True)`, and it helps only if it is on "
    "before the labels are made:")


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


def script_anomaly_intro(explained: ExplainedBlog) -> str:
    """Markdown: what anomaly mode said on the blog's script, and what it lacks."""
    frames = explained.anomaly_frames
    chain = ", called from ".join(f"line {f.line} (`{f.code}`)" for f in reversed(frames))
    saved = marks_of(explained, "saved", False)
    same = (" The same line as *saved here* above." if saved and frames and frames[-1].line == saved[0].line
            else "")
    written = marks_of(explained, "written", False)
    missing = (f" It says nothing of the write, {line_of(written[0])}: that is what fitlab.explain's "
               "recorder adds." if written else "")
    return (
        "The error's hint says to enable anomaly detection. The same script was run once more with "
        "anomaly mode on from its first line (as `torch.autograd.set_detect_anomaly(True)` there "
        f"would be), in the same worker process. Torch said `Error detected in {explained.anomaly_node}` "
        f"and attached the forward traceback of that node: {chain}, where the labels' graph saved "
        f"the tensor.{same}{missing} It costs: anomaly mode captures a Python stack for every "
        "node every forward pass builds, for the whole run, and it is process-wide, so on this "
        "server it only runs in the worker.")


def script_anomaly_missing(explained: ExplainedBlog | None) -> str:
    """A sentence when there is no anomaly trace of the blog's script to show."""
    if explained is None:
        return "Not shown: the blog's script could not be run in the worker process this time."
    return "Under anomaly mode the blog's script did not fail."


@st.cache_data(max_entries=32, show_spinner="Running the blog's vivid example…")
def cached_vivid_example(config: Config) -> tuple[VividCase, ...]:
    """vivid_example(config), once per config."""
    return vivid_example(config)


def vivid_section(cases: tuple[VividCase, ...]) -> None:
    """4. The blog's "more vivid example", run on this net and on one ending in ReLU."""
    st.subheader("4. The blog's “more vivid example”, run")
    st.markdown(vivid_note(cases))
    with st.container(key="vivid_example"):   # the lesson's last picture: a handle for tools/bench_browser
        st.table(vivid_table(cases).style.hide(axis="index"))


def vivid_note(cases: tuple[VividCase, ...]) -> str:
    """Markdown: what the runs of the blog's vivid example showed."""
    ran = [c for c in cases if c.error is None]
    raised = [c for c in cases if c.error is not None]
    blog_net = next(c for c in cases if c.net == NETS[0])
    relu_net = next(c for c in cases if c.net == NETS[1])
    return (
        "The blog's other example edits the net's output in place before the loss "
        "(`label += 1`, or `label[0, 0] = label[0, 0] * 2`) and says this breaks backward. Run here "
        f"on this net, {len(ran)} of {len(cases)} edits run and {len(raised)} raise. On the blog's net "
        f"the output comes from `{blog_net.node}`, which saved only its inputs "
        f"({', '.join(f'`{n}`' for n in blog_net.saved)}): nothing backward needs was written, so the "
        f"edits are harmless. End the net with a ReLU and the output comes from `{relu_net.node}`, "
        f"which saved its output (`{', '.join(relu_net.saved)}`): the same edits then bump the version "
        "of a saved tensor, and backward refuses. An in-place edit fails only when it writes to "
        "something a node saved.")


def vivid_table(cases: tuple[VividCase, ...]) -> pd.DataFrame:
    """net, edit, what made label (and what it saved), outcome: one row per case."""
    return pd.DataFrame([{
        "net": NET_NAMES[c.net], "in-place edit of label": c.edit,
        "label made by (saved)": f"{c.node} ({', '.join(c.saved) or 'nothing'})",
        "loss.backward()": "✓ runs" if c.error is None else f"✗ RuntimeError: {_tensor_part(c.error)}",
    } for c in cases])


def _tensor_part(message: str) -> str:
    """The part of an in-place error naming the tensor and its versions, from
    its decoded facts; the whole message if it names none."""
    d = decode(message)
    if d is None or d.shape is None or d.producer_name is None or d.version is None:
        return message
    return (f"[{d.tensor_type} [{', '.join(map(str, d.shape))}]], which is output {d.output_index} of "
            f"{d.producer_name}, is at version {d.version}; expected version {d.expected_version}")
