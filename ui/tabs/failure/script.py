"""The blog's own script with the user's numbers, run for real through
fitlab.explain in a worker process: its marked lines (saved, written,
failed) and the report; the sections below cite its lines (line_of, marks_of)."""

from __future__ import annotations

import html

import streamlit as st

from fitlab import Config
from fitlab.explain import format_report
from fitlab.explain.causes import DID_NOT_HELP, PROVED, RUNS
from fitlab.failure.explained import SCRIPT_NAME, ExplainedBlog, Mark, explained_blog
from fitlab.serving.budget import replay_seconds
from fitlab.serving.isolation import WorkerDied, run_isolated
from ui.state import heavy

# Seconds the anomaly replay may take in its worker: one forward and backward
# pass, well under a second at the page's largest settings.
REPLAY_TIMEOUT = 60


@st.cache_data(max_entries=32, show_spinner="Running the blog's script…")
def cached_explained(config: Config) -> ExplainedBlog:
    """explained_blog(config), once per config, in a worker process: running
    a script as __main__ (three times: plainly, --fix's edited copy, under
    anomaly mode) would change other sessions' runs here."""
    return heavy("the blog's script", run_isolated, explained_blog, config, timeout=REPLAY_TIMEOUT,
                 estimate=3 * replay_seconds(config))  # run, --fix's rerun, then under anomaly mode


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
    with st.container(key="marked_script"):   # a stable handle for the browser tests
        st.html(marked_script_html(explained))
    st.markdown(script_story(explained))
    st.caption(f"What `python -m fitlab.explain {SCRIPT_NAME}` prints after Python's traceback:")
    st.code(format_report(report), language="text", wrap_lines=True)
    if report.proof is not None:
        with st.container(key="script_fix"):
            st.markdown(script_fix_words(explained))
            st.code(report.proof.diff, language="diff")
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


# The marked lines stand out from the blog's own grey comments: a tinted row,
# a bar in the role's colour, and the role in words beside the code. Code
# keeps its lines and indentation: a narrow screen scrolls it sideways.
_ROLE_COLOURS = {"saved": "#1f77b4", "written": "#d62728", "failed": "#9467bd"}
_ROLE_WORDS = {"saved": "saved", "written": "written", "failed": "fails"}
_SCRIPT_STYLE = """<style>
.fitlab-script { font-family: "Source Code Pro", monospace; font-size: .8rem; line-height: 1.45;
  background: #f6f7f9; border-radius: .5rem; padding: .5rem 0; overflow-x: auto; margin: 0; }
.fitlab-script [data-line] { display: flex; gap: .75rem; padding: 0 .75rem; white-space: pre;
  width: max-content; min-width: calc(100% - 1.5rem); }
.fitlab-script .n { color: #9aa0a6; min-width: 2.2em; text-align: right; user-select: none; flex: none; }
.fitlab-script code { background: none; padding: 0; white-space: pre; font-size: inherit; }
.fitlab-script [data-mark] { border-left: 4px solid var(--mark);
  background: color-mix(in srgb, var(--mark) 14%, white); }
.fitlab-script [data-mark] code { font-weight: 600; }
.fitlab-script .say { display: block; font-family: "Source Sans Pro", sans-serif; font-size: .85rem;
  color: var(--mark); font-weight: 600; white-space: normal; max-width: 30rem; }
.fitlab-script .role { text-transform: uppercase; letter-spacing: .04em; margin-right: .4em; }
</style>"""


def marked_lines(explained: ExplainedBlog) -> list[tuple[int, str, str | None, str]]:
    """The script line by line: (number, code, role of its mark or None,
    what the mark says, "" for an unmarked line)."""
    said: dict[int, list[str]] = {}
    roles: dict[int, str] = {}
    for mark in explained.marks:
        said.setdefault(mark.line, []).append(_mark_comment(mark, explained).removeprefix("← "))
        if not mark.caller or mark.line not in roles:
            roles[mark.line] = mark.role
    lines = explained.script.rstrip("\n").split("\n")
    return [(i, text, roles.get(i), "; ".join(said.get(i, []))) for i, text in enumerate(lines, start=1)]


def marked_script_html(explained: ExplainedBlog) -> str:
    """The script as HTML, numbered, each marked line highlighted and worded.
    The script is fitlab's own (the blog's, with the Config's numbers), and
    escaped all the same."""
    rows = []
    for number, code, role, says in marked_lines(explained):
        if role is None:
            rows.append(f'<div data-line="{number}"><span class="n">{number}</span>'
                        f"<code>{html.escape(code) or ' '}</code></div>")
            continue
        rows.append(f'<div data-line="{number}" data-mark="{role}" style="--mark:{_ROLE_COLOURS[role]}">'
                    f'<span class="n">{number}</span><span><code>{html.escape(code)}</code>'
                    f'<span class="say"><span class="role">{_ROLE_WORDS[role]}</span> {html.escape(says)}</span>'
                    "</span></div>")
    return f'{_SCRIPT_STYLE}<pre class="fitlab-script">{"".join(rows)}</pre>'


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


# Why --fix proves nothing of the blog's own fix, in this lesson's terms.
_NO_REFERENCE = (
    "No reference applies here: the reference keeps every saved tensor's old value, and kept so, the "
    "teacher's graph would carry the labels' gradients on into the very weights the student trains "
    "(teacher and student are one net). The detached labels stop gradients reaching the teacher's "
    "graph, which is what the fix is for, so the edited program computes something else than the "
    "original could, and `--fix` says so rather than call it proved.")
_VERDICT_WORDS = {PROVED: "it is **proved**", RUNS: "it **runs**", DID_NOT_HELP: "it **did not help**"}


def script_fix_words(explained: ExplainedBlog) -> str:
    """Markdown above --fix's diff: the command, the line it edits and its verdict, from the
    proof the worker's rerun gave."""
    proof = explained.report.proof
    culprit = proof.culprits[-1]
    verdict = _VERDICT_WORDS.get(proof.verdict, f"its verdict is *{proof.verdict}*")
    words = (f"**Proof, not advice.** `python -m fitlab.explain --fix {SCRIPT_NAME}` applies the fix to a "
             f"copy of the script (the diff below), reruns the copy to the backward that failed and one "
             f"step past it, and checks what changed: {verdict}.")
    if proof.verdict == RUNS and culprit.kind == "detach_labels":
        words += " " + _NO_REFERENCE
    return words


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
