"""The fix gallery: every candidate fix of the blog's script, run for real on
the user's settings, with torch's outcome and the library's verdict
(fitlab.failure.fixes.Verdict) in words."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from fitlab import Config
from fitlab.failure.explained import ExplainedBlog
from fitlab.failure.fixes import (
    BLOG,
    VARIANTS,
    Catch,
    Failure,
    FixOutcome,
    Judgement,
    Verdict,
    gallery_config,
    references,
    run_variant,
    variant_seconds,
    verdicts,
)
from ui.phone import stacked_table_style
from ui.state import heavy
from ui.tabs.failure.script import line_of, marks_of

# Each variant of fitlab.failure.fixes.VARIANTS, by its key, in a few words.
VARIANT_NAMES = {
    "blog": "as the blog wrote it",
    "detach": ".detach() the labels",
    "no_grad": "labels under torch.no_grad()",
    "clone": ".clone() the labels",
    "no_reshape": "no reshape (the blog's suspect)",
    "deep_copy": "deep copy of the teacher",
    "deep_copy_retain_graph": "deep copy + retain_graph=True",
    "data_reinit": "re-init through .data",
    "identity_hooks": "identity saved-tensor hooks",
    "identity_hooks_retain_graph": "identity hooks + retain_graph=True",
}


def gallery_section(config: Config) -> None:
    """Every candidate fix, run for real on these settings."""
    st.subheader("Fix gallery")
    run_for = gallery_config(config)
    epochs = (f"{config.epochs} epochs" if run_for.epochs == config.epochs else
              f"the first {run_for.epochs} of your {config.epochs} epochs, so that the whole "
              "gallery stays within the work budget of one run")
    st.markdown(
        f"Each variant changes {changed_lines()} of the blog's script and trains for real on your "
        f"settings ({epochs}). The outcome is torch's exception, or the final losses; the "
        "verdict reads **✓** a fix, **✗** no fix, **⚠** runs, with a catch.")
    outcomes = gallery_with_progress(run_for)
    # A static table: the verdicts are sentences, and shown whole; on a
    # phone each variant is a block, its cells one under the other.
    table = gallery_table(outcomes)
    with st.container(key="fix_gallery"):
        stacked_table_style("fix_gallery", list(table.columns))
        st.html(GALLERY_STYLE)
        st.table(table.style.hide(axis="index").map(verdict_colour, subset=["verdict"]))
    with st.expander("Torch's messages in full"):
        for message in gallery_messages(outcomes):
            st.code(message, language="text", wrap_lines=True)


# The table fits its column (it was wider, the verdicts past the edge at
# 1280 and 1440 px): fixed columns, the verdict's the widest, long code
# broken anywhere; code in the code font.
GALLERY_STYLE = """<style>
@media (min-width: 641px) {
  .st-key-fix_gallery table { table-layout: fixed; width: 100%; }
  .st-key-fix_gallery th:nth-of-type(1), .st-key-fix_gallery td:nth-of-type(1) { width: 16%; }
  .st-key-fix_gallery th:nth-of-type(2), .st-key-fix_gallery td:nth-of-type(2) { width: 22%; }
  .st-key-fix_gallery th:nth-of-type(3), .st-key-fix_gallery td:nth-of-type(3) { width: 22%; }
  .st-key-fix_gallery th:nth-of-type(4), .st-key-fix_gallery td:nth-of-type(4) { width: 40%; }
}
.st-key-fix_gallery td { overflow-wrap: anywhere; }
.st-key-fix_gallery td:nth-of-type(2) { font-family: "Source Code Pro", ui-monospace, monospace;
  font-size: 0.85em; }
</style>"""
# ✓ a fix, ✗ no fix, ⚠ a catch: green, red, amber, dark enough to read as text.
VERDICT_COLOURS = {"✓": "#1a7f37", "✗": "#b42318", "⚠": "#9a6700"}


def verdict_colour(verdict: str) -> str:
    """The CSS colour of a verdict cell, by its mark."""
    colour = VERDICT_COLOURS.get(verdict[:1])
    return f"color: {colour}; font-weight: 600" if colour else ""


def changed_lines() -> str:
    """How many lines of the blog's script the variants change: "one line",
    "one or two lines"."""
    counts = sorted({v.lines for v in VARIANTS if v != BLOG})
    names = {1: "one", 2: "two", 3: "three"}
    said = " or ".join(names.get(n, str(n)) for n in counts)
    return f"{said} line{'s' if counts[-1] > 1 else ''}"


@st.cache_data(max_entries=16 * len(VARIANTS), show_spinner=False)
def cached_outcome(config: Config, variant: int) -> FixOutcome:
    """run_variant(config, VARIANTS[variant]), once per config and variant."""
    return heavy("the fix gallery", run_variant, config, VARIANTS[variant],
                 estimate=variant_seconds(config, VARIANTS[variant]))


def gallery_with_progress(config: Config) -> tuple[FixOutcome, ...]:
    """The fix gallery's outcomes, each from the cache or trained under a progress bar."""
    bar = st.progress(0, text="Running every fix for real…")
    outcomes = []
    for i, variant in enumerate(VARIANTS):
        bar.progress(i / len(VARIANTS), text=f"Running the fixes for real: {VARIANT_NAMES[variant.key]}")
        outcomes.append(cached_outcome(config, i))
    bar.empty()
    return tuple(outcomes)


def _first_sentence(message: str) -> str:
    head, dot, rest = message.partition(". ")
    return head + "." if dot and rest else message


def outcome_text(outcome: FixOutcome, blog: FixOutcome | None = None) -> str:
    """The exception as torch raised it (once: a message the blog's row
    already shows is named, not repeated; another is cut to its first
    sentence, whole under gallery_messages), or the final losses."""
    err = outcome.error
    if err is None:
        last = outcome.history.iloc[-1]
        return f"trains: final train MSE {last.train_loss:.6g}, test MSE {last.test_loss:.6g}"
    if blog is None or outcome is blog:
        return f"{err.type}: {err.message}"
    if blog.error is not None and err.message == blog.error.message:
        return f"{err.type}: the blog's message, word for word"
    short = _first_sentence(err.message)
    return f"{err.type}: {short}" + (" (whole message below)" if short != err.message else "")


def gallery_messages(outcomes: tuple[FixOutcome, ...]) -> list[str]:
    """Each distinct exception text of the gallery once, in row order."""
    return list(dict.fromkeys(f"{o.error.type}: {o.error.message}" for o in outcomes if o.error is not None))


# Why the variants that keep the labels' graph fail at the second step.
FREED_GRAPH = ("all the labels hang off one graph (the teacher's forward pass over all of X), and "
               "the first backward() frees what it saved; the second step needs it again")


def verdict_text(verdict: Verdict, outcome: FixOutcome, detached: FixOutcome) -> str:
    """The verdict as a scannable sentence: ✓ a fix, ✗ no fix, ⚠ runs with a
    catch (the catch stated), with the numbers the runs measured."""
    catches = verdict.catches
    said = []
    if Catch.WRONG_GRADIENTS in catches:
        said.append(f"the first step's gradients are wrong (off by up to {verdict.gradient_gap:.3g}): backward "
                    "also runs through the labels' graph into the same weights, with the values "
                    "the re-init wrote, and the version check cannot see it")
    err = outcome.error
    if verdict.judgement is not Judgement.NO_FIX:
        if Catch.TEACHER_GRADIENTS in catches:
            said.append(f"the teacher's weights get gradients too ({norm(outcome.teacher_gradient)})")
        if Catch.WALKS_LABEL_GRAPH in catches:
            said.append(f"every backward() also walks the teacher's graph of all {outcome.config.n_samples} "
                        "labels again, and keeps it in memory")
        if Catch.TRAINS_ON_WRONG_GRADIENTS in catches:
            last, right = outcome.history.iloc[-1], detached.history.iloc[-1]
            finals = (f" (final train MSE {last.train_loss:.4g}, against {right.train_loss:.4g} with .detach())"
                      if np.isfinite([last.train_loss, right.train_loss]).all() else "")
            said.append(f"it trains on wrong gradients to the end{finals}")
        gone = diverged_at(outcome)
        blew = "" if gone is None else (
            f"training diverged at epoch {gone} (its train loss became "
            f"{'NaN' if np.isnan(outcome.history.set_index('epoch').train_loss.loc[gone]) else 'infinite'})")
        if verdict.identical:
            same = ("; numbers identical to .detach()" if gone is None else
                    f"; its losses are .detach()'s, epoch for epoch, and like them {blew}")
        else:
            same = f"; {blew}" if blew else ""
        if verdict.judgement is Judgement.FIXES:
            return ("✓ fixes the in-place error" if gone is not None else "✓ fixes it") + same
        return "⚠ runs" + same + ", but: " + "; ".join(said)
    if verdict.failure is Failure.BLOG:
        return f"✗ fails at epoch {err.epoch}, batch {err.batch}: the in-place error"
    if verdict.failure is Failure.SAME:
        return "✗ no fix: the blog's very error"
    where = f"epoch {err.epoch}, batch {err.batch}"
    passed = "the first step passes, then it fails" if (err.epoch, err.batch) != (1, 1) else "it fails"
    why = f": {FREED_GRAPH}" if verdict.failure is Failure.FREED_GRAPH else ""
    notes = [f"✗ no fix: {passed} at {where} with a different error{why}", *said]
    if Catch.TEACHER_GRADIENTS in catches:
        notes.append(f"the teacher's weights got gradients ({norm(outcome.teacher_gradient)})")
    return "; ".join(notes)


def norm(value: float) -> str:
    """A gradient norm in words: "norm 1.93", or that it is not a number."""
    return f"norm {value:.3g}" if np.isfinite(value) else "their norm not a number"


def diverged_at(outcome: FixOutcome) -> int | None:
    """The first epoch whose train loss is not a number (inf or NaN), or None."""
    history = outcome.history
    gone = history[~np.isfinite(history.train_loss)]
    return None if gone.empty else int(gone.epoch.iloc[0])


def gallery_table(outcomes: tuple[FixOutcome, ...]) -> pd.DataFrame:
    """variant, code change, outcome, verdict: one row per outcome."""
    blog, detached = references(outcomes)
    return pd.DataFrame([{"variant": VARIANT_NAMES[o.variant.key], "code change": o.variant.change,
                          "outcome": outcome_text(o, blog), "verdict": verdict_text(v, o, detached)}
                         for o, v in zip(outcomes, verdicts(outcomes))])


def script_gallery_note(explained: ExplainedBlog) -> str | None:
    """Which script line each kind of variant changes."""
    label, write = marks_of(explained, "saved", False), marks_of(explained, "written", False)
    reinit, backward = marks_of(explained, "written", True), marks_of(explained, "failed", False)
    if not (label and write and reinit and backward):
        return None
    return (f"In the blog's script (the *Inside the failure* tab), the label variants change "
            f"{line_of(label[0])}; the deep copy goes "
            f"before {line_of(reinit[0])}; *re-init through .data* changes {line_of(write[0])}; "
            f"*retain_graph=True* changes {line_of(backward[0])}.")
