"""The blog's own script with the user's numbers, run for real through
fitlab.explain in a worker process: its marked lines (saved, written,
failed) and the report; the sections below cite its lines (line_of, marks_of)."""

from __future__ import annotations

import streamlit as st

from fitlab import Config
from fitlab.explain import format_report
from fitlab.failure.explained import SCRIPT_NAME, ExplainedBlog, Mark, explained_blog
from fitlab.isolation import WorkerDied, run_isolated
from ui.state import heavy, replay_seconds

# Seconds the anomaly replay may take in its worker: one forward and backward
# pass, well under a second at the page's largest settings.
REPLAY_TIMEOUT = 60


@st.cache_data(max_entries=32, show_spinner="Running the blog's script…")
def cached_explained(config: Config) -> ExplainedBlog:
    """explained_blog(config), once per config, in a worker process: running
    a script as __main__ and anomaly mode would change other sessions' runs here."""
    return heavy("the blog's script", run_isolated, explained_blog, config, timeout=REPLAY_TIMEOUT,
                 estimate=2 * replay_seconds(config))  # run plainly, then under anomaly mode


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


def line_of(mark: Mark) -> str:
    """E.g. "line 23 (`loss.backward()`)", without the line's own comment."""
    return f"line {mark.line} (`{mark.code.split('  # ')[0]}`)"


def marks_of(explained: ExplainedBlog, role: str, caller: bool) -> list[Mark]:
    """The marks of `role` ("saved", "written", "failed"): the lines of the
    torch call itself, or (caller) the script's lines that called it."""
    return [m for m in explained.marks if m.role == role and m.caller == caller]


def _mark_comment(mark: Mark, explained: ExplainedBlog) -> str:
    """The comment put after a marked line of the script."""
    report = explained.report
    inner = marks_of(explained, mark.role, False)
    where = f"line {inner[0].line}" if inner else "inside"
    if mark.role == "saved":
        if mark.caller:
            return f"← the labels' graph is built here (the tensor is saved in {where})"
        t = report.tensor
        return f"← saved here: {t.node} saved {list(t.shape)} as {t.saved_as} at version {t.saved_version}"
    if mark.role == "written":
        if mark.caller:
            return f"← calls {where}, which writes the saved tensor"
        w = report.writes[0]
        return f"← written here: {w.op}, version {w.version_before} → {w.version_before + 1}"
    if mark.caller:
        return f"← calls {where}, where backward fails"
    t = report.tensor
    return f"← backward fails here: the saved tensor is at version {t.version}, expected {t.saved_version}"


def marked_script(explained: ExplainedBlog) -> str:
    """The script with a `# ← …` comment after each line the report points at."""
    comments: dict[int, list[str]] = {}
    for mark in explained.marks:
        comments.setdefault(mark.line, []).append(_mark_comment(mark, explained))
    lines = explained.script.rstrip("\n").split("\n")
    return "\n".join(f"{text}  # {'; '.join(comments[i])}" if i in comments else text
                     for i, text in enumerate(lines, start=1))


def script_intro(explained: ExplainedBlog) -> str:
    """Markdown above the script: what ran, where, and with which numbers."""
    c = explained.config
    uses = f"{c.shared_repeats} use{'s' if c.shared_repeats != 1 else ''} of the shared layer"
    tying = "" if c.tied else ", untied after the re-init (one copy per use)"
    return (f"This is the blog's own program, formatted, with your numbers (width {c.width}, {uses}"
            f"{tying}, lr {c.lr:g}, batch size {c.batch_size}, seed {c.seed}). It ran for "
            f"real as `python -m fitlab.explain {SCRIPT_NAME}` does, in a worker process of "
            "its own, recording every in-place write. The marked lines are the ones the report "
            "points at:")


def script_story(explained: ExplainedBlog) -> str:
    """Markdown: the three marked lines in the order they ran, from the report's frames."""
    report = explained.report
    t = report.tensor
    parts = []
    for role, says in (
            ("saved", f"the teacher's forward pass: `{t.node}` saved the `{list(t.shape)}` tensor "
                      f"(as `{t.saved_as}`) at version {t.saved_version}"),
            ("written", "the in-place write that moved it on"
                        + (f" (`{report.writes[0].op}`, version {report.writes[0].version_before} → "
                           f"{report.writes[0].version_before + 1})" if report.writes else "")),
            ("failed", "the student's first `loss.backward()`, which walks into the labels' graph, "
                       "finds the stale tensor, and raises")):
        inner, callers = marks_of(explained, role, False), marks_of(explained, role, True)
        if not inner:
            continue
        called = "".join(f", called from {line_of(m)}" for m in reversed(callers))
        parts.append(f"- **{role.capitalize()}**: {line_of(inner[0])}{called}: {says}.")
    return "\n".join(parts)


def script_did_not_fail(explained: ExplainedBlog) -> str:
    """Markdown when the script did not die of the in-place error, or the
    recorder found none of its lines."""
    status = explained.report.status
    if status == "finished":
        return "The blog's script ran to its end: nothing raised the in-place error."
    if status == "inplace_error":
        return ("The blog's script raised the in-place error, but the recorder found none of its "
                "lines in the report, so nothing is marked. The script as it ran:")
    return "The blog's script stopped with another error, shown as Python printed it:"


def script_replay_failed(exc: BaseException) -> str:
    """A plain sentence when the worker could not run the blog's script."""
    why = "took too long" if isinstance(exc, TimeoutError) else "could not be run"
    return (f"The blog's script {why} in the worker process this time, so it is not shown; the "
            "views below replay the failure without it. Reload the page to try again.")
