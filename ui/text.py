"""Every sentence the page says, built from the library's facts: the lesson, the
notes under the charts, the fix gallery's verdicts."""

from __future__ import annotations

import math
import re

import pandas as pd

from fitlab.explain import Decoded
from fitlab.failure.explained import SCRIPT_NAME, ExplainedBlog, Mark
from fitlab.failure.fixes import BLOG, DETACH, FixOutcome, gradient_gap
from fitlab.run import Run

_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")
_SHAPE = re.compile(r"\[torch\.\w+ (\[[\d, ]*\])\]")

FIX_CODE = """\
labels = net(X).detach().reshape((-1, 1))   # cut the labels off the teacher's graph
# or never build that graph at all:
with torch.no_grad():
    labels = net(X).reshape((-1, 1))"""


def error_explanation(run: Run) -> str:
    """Markdown: what really went wrong in a failed run, quoting torch's
    message for the shape and the two version numbers."""
    message = run.error.message
    versions = _VERSIONS.search(message)
    shape = _SHAPE.search(message)
    tensor = f"the `{shape.group(1)}` tensor torch names" if shape else "the tensor torch names"
    if versions:
        now, saved = versions.groups()
        moved = f"It was saved at version {saved} and is now at version {now}."
    else:
        moved = "Its version counter moved on after it was saved."
    return f"""\
**What actually went wrong**

1. The labels were computed by the teacher and **not detached**, so every label
   still carries the teacher's autograd graph. To differentiate later, that
   graph *saved* the weights it multiplied by: {tensor} is the last layer's
   weight, saved transposed (`weight.t()`, a strided view, hence "AsStrided").
2. The script then re-initialised **the same net in place** to make the
   student. Every in-place write bumps a tensor's version counter. {moved}
3. The loss compares the student's output with the labels, so `loss.backward()`
   walks on into the labels' graph, finds a saved tensor whose version moved,
   and refuses to compute a gradient from stale values.

**Not the culprit: `reshape`.** The blog blames it, but `reshape` writes
nothing; drop it and the error stays. The culprit is the attached labels plus
the in-place re-initialisation.

**The fix** (tick *Detach the labels* in the sidebar to run it):
"""


def blog_figure_note(run: Run) -> str:
    """One sentence on the blog's test figure versus the true test MSE."""
    config = run.config
    n_batches = math.ceil(config.n_test / config.batch_size)
    true_mse = run.history.test_loss.iloc[-1]
    return (f"The test loss here is the true mean squared error over the {config.n_test} "
            f"test rows ({true_mse:.4g}); the blog's script would print "
            f"{run.blog_test_loss:.4g}, because it adds up the {n_batches} per-batch means "
            f"instead of averaging them.")


def divergence_note(run: Run) -> str | None:
    """Markdown saying plainly that and when a run diverged, or None."""
    epoch = run.diverged_at
    if epoch is None:
        return None
    drawn = "epoch 0" if epoch == 1 else f"epochs 0 to {epoch - 1}"
    return (f"**Training diverged at epoch {epoch}**: the loss overflowed to infinity or "
            f"became NaN, because each SGD step overshot by more than the last (learning "
            f"rate {run.config.lr:g} is too large for this net). The chart draws the finite "
            f"losses ({drawn}); the tables and the CSV keep everything, NaN and inf included.")


def engine_note(run: Run) -> str:
    """One sentence: which engine trained the run, and where the other is."""
    if run.engine == "fast":
        return ("Trained by the **fast** engine: the same math as autograd, written out by hand "
                "in numpy. The **autograd** engine (torch, the blog's way) is under Advanced › Engine.")
    if not run.config.detach:
        return ("Trained by the **autograd** engine: with the labels attached only torch's "
                "backward() can show the blog's error, so the fast engine does not apply.")
    return ("Trained by the **autograd** engine: torch, the blog's way. The **fast** engine "
            "(the same math by hand in numpy) is under Advanced › Engine.")


# Why raw distance is the wrong yardstick.
WHY_RAW_STAYS_LARGE = (
    "Relabelling the hidden units of a ReLU net, with the weights into and out of them, "
    "does not change what the net computes, so the student can reproduce the teacher's "
    "outputs (loss near zero) at a relabelled copy of its weights, far away in raw "
    "distance; the matched distance removes that relabelling, and what remains shows "
    "that the training rows are also fitted by weights that are not the teacher's.")


def recording_note(distances: pd.DataFrame, epochs: int) -> str:
    """In words, at which epochs a run's distances were recorded."""
    raw = distances["epoch"].nunique()
    matched = distances.dropna(subset=["matched"])["epoch"].nunique()
    where = "every epoch" if raw == epochs + 1 else f"{raw} evenly spaced epochs"
    return (f"Raw distance recorded at {where}, matched at {matched} of them (matching "
            f"costs linear assignments, so wide nets get fewer).")


def outcome_text(outcome: FixOutcome) -> str:
    """The exception exactly as torch raised it, or the final losses."""
    if outcome.error is not None:
        return f"{outcome.error.type}: {outcome.error.message}"
    last = outcome.history.iloc[-1]
    return f"trains: final train MSE {last.train_loss:.6g}, test MSE {last.test_loss:.6g}"


def verdict(outcome: FixOutcome, blog: FixOutcome, detached: FixOutcome) -> str:
    """A short judgement built from what the runs measured, against the
    blog's run and the detached run."""
    notes = []
    err = outcome.error
    if err is None:
        same = outcome.history.equals(detached.history)
        identical = same and outcome is not detached
        notes.append("fixes the error" + ("; numbers identical to .detach()" if identical else ""))
    elif outcome is blog:
        notes.append(f"fails at epoch {err.epoch}, batch {err.batch}: the in-place error")
    elif blog.error is not None and err.message == blog.error.message:
        notes.append("no fix: the blog's very error")
    else:
        passed = "the first step passes, then it " if (err.epoch, err.batch) != (1, 1) else "it "
        notes.append(f"no fix: {passed}fails at epoch {err.epoch}, batch {err.batch} with a different error")
    gap = gradient_gap(outcome, detached)
    if gap is not None and gap > 1e-6:
        notes.append(f"first-batch gradients silently wrong (off by up to {gap:.3g})")
    if outcome.teacher_gradient is not None:
        notes.append(f"the teacher's weights got gradients (norm {outcome.teacher_gradient:.3g})")
    if outcome.variant.retain_graph and err is None and detached.seconds > 0:
        notes.append(f"{outcome.seconds / detached.seconds:.1f}× the time of .detach()")
    return "; ".join(notes)


def gallery_table(outcomes: tuple[FixOutcome, ...]) -> pd.DataFrame:
    """variant, code change, outcome, verdict: one row per outcome."""
    # By value: outcomes that went through a cache hold unpickled copies of the variants.
    blog = next(o for o in outcomes if o.variant == BLOG)
    detached = next(o for o in outcomes if o.variant == DETACH)
    return pd.DataFrame([{"variant": o.variant.name, "code change": o.variant.change,
                          "outcome": outcome_text(o), "verdict": verdict(o, blog, detached)}
                         for o in outcomes])


# --- The blog's script, run through fitlab.explain --------------------------

EXPLAIN_COMMAND = "python -m fitlab.explain your_script.py"


def _line(mark: Mark) -> str:
    """E.g. "line 23 (`loss.backward()`)", without the line's own comment."""
    return f"line {mark.line} (`{mark.code.split('  # ')[0]}`)"


def _marks(explained: ExplainedBlog, role: str, caller: bool) -> list:
    return [m for m in explained.marks if m.role == role and m.caller == caller]


def _mark_comment(mark: Mark, explained: ExplainedBlog) -> str:
    """The comment put after a marked line of the script."""
    report = explained.report
    inner = _marks(explained, mark.role, False)
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
        inner, callers = _marks(explained, role, False), _marks(explained, role, True)
        if not inner:
            continue
        called = "".join(f", called from {_line(m)}" for m in reversed(callers))
        parts.append(f"- **{role.capitalize()}**: {_line(inner[0])}{called}: {says}.")
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


def script_anomaly_missing(explained: ExplainedBlog | None) -> str:
    """A sentence when there is no anomaly trace of the blog's script to show."""
    if explained is None:
        return "Not shown: the blog's script could not be run in the worker process this time."
    return "Under anomaly mode the blog's script did not fail."


def script_ledger_note(explained: ExplainedBlog) -> str | None:
    """Which script line each of the ledger's three moments is."""
    saved, written = _marks(explained, "saved", True), _marks(explained, "written", True)
    failed = _marks(explained, "failed", False)
    if not (saved and written and failed):
        return None
    return (f"In the script above: *at the teacher's forward* is {_line(saved[0])}; *after the "
            f"student's re-init* is after {_line(written[0])}; *at the failing backward* is "
            f"{_line(failed[0])}.")


def script_graph_note(explained: ExplainedBlog) -> str | None:
    """Which script lines built the graph and wrote its stale tensors."""
    saved, written = _marks(explained, "saved", True), _marks(explained, "written", False)
    if not (saved and written):
        return None
    return (f"This graph was built by {_line(saved[0])} in the script above; its red tensors were "
            f"written by {_line(written[0])}.")


def script_gallery_note(explained: ExplainedBlog) -> str | None:
    """Which script line each kind of variant changes."""
    label, write = _marks(explained, "saved", False), _marks(explained, "written", False)
    reinit, backward = _marks(explained, "written", True), _marks(explained, "failed", False)
    if not (label and write and reinit and backward):
        return None
    return (f"In the script above, the label variants change {_line(label[0])}; the deep copy goes "
            f"before {_line(reinit[0])}; *re-init through .data* changes {_line(write[0])}; "
            f"*retain_graph=True* changes {_line(backward[0])}.")


def script_anomaly_intro(explained: ExplainedBlog) -> str:
    """Markdown: what anomaly mode said on the blog's script, and what it lacks."""
    frames = explained.anomaly_frames
    chain = ", called from ".join(f"line {f.line} (`{f.code}`)" for f in reversed(frames))
    saved = _marks(explained, "saved", False)
    same = (" The same line as *saved here* above." if saved and frames and frames[-1].line == saved[0].line
            else "")
    written = _marks(explained, "written", False)
    missing = (f" It says nothing of the write, {_line(written[0])}: that is what fitlab.explain's "
               "recorder adds." if written else "")
    return (
        "The error's hint says to enable anomaly detection. The same script was run once more with "
        "anomaly mode on from its first line (as `torch.autograd.set_detect_anomaly(True)` there "
        f"would be), in the same worker process. Torch said `Error detected in {explained.anomaly_node}` "
        f"and attached the forward traceback of that node: {chain}, where the labels' graph saved "
        f"the tensor.{same}{missing} It costs: anomaly mode captures a Python stack for every "
        "node every forward pass builds, for the whole run, and it is process-wide, so on this "
        "server it only runs in the worker.")


# --- Decode your own message ------------------------------------------------

NOT_THIS_ERROR = (
    "That is not this error. This box explains torch's *\"one of the variables needed for gradient "
    "computation has been modified by an inplace operation\"*; paste that message (the whole "
    "`RuntimeError:` line) to have it decoded.")

_PRODUCERS = {
    "transposed_weight": (
        "a view with its strides rearranged: in a model, almost always a **layer's weight seen "
        "transposed** (`nn.Linear` multiplies by `weight.t()`). Torch 2.x names such a view "
        "`AsStrided` once its base was written in place; older versions said `TBackward`"),
    "activation_output": (
        "the output of an **activation or elementwise function** that saves its own output for its "
        "gradient (ReLU, sigmoid, tanh, exp, softmax…): something changed that output in place "
        "after it was computed"),
    "index_view": (
        "a **view made by indexing, slicing or reshaping** another tensor: a write to the view or "
        "to its base (e.g. `h[:, 0] = 0`) changed what was saved"),
    "other": "another operation's output, saved for its gradient",
}
_LEAF = ("The message names no operation that made it: it is a **leaf**, made by no tracked "
         "operation, such as a parameter or an input. Most likely a weight changed in place "
         "(an optimiser step, an init, `.copy_`) between the forward pass and its backward.")
CAUSES = {
    "reinit_or_step_on_weights": (
        "The weights were re-initialised or changed in place (`nn.init.*_`, `.copy_`, "
        "`optimizer.step()`) after a forward pass whose graph is still differentiated: the blog's "
        "bug, labels made by the net and not detached. Fix: `.detach()` what the old weights made."),
    "optimizer_step_between_backwards": (
        "`optimizer.step()` ran between a forward pass and a backward through it (e.g. a GAN: the "
        "discriminator's step, then the generator's backward through the old graph). Fix: every "
        "backward that needs the graph before the step, or a fresh forward pass after it."),
    "inplace_activation": (
        "An in-place activation (`nn.ReLU(inplace=True)`, `F.relu_`, `x.sigmoid_()`) overwrote a "
        "tensor the previous operation saved. Fix: drop `inplace=True`."),
    "augmented_assignment": (
        "`x += …`, `x *= …` or another `_`-suffixed method on a tensor autograd saved. Fix: "
        "`x = x + …`, or `x = x.clone()` before the write."),
    "index_assignment": (
        "`x[idx] = …` on a tensor autograd saved (or on a view of it). Fix: write to a clone, or "
        "build the result with `torch.where` / `torch.cat`."),
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def decoded_parts(d: Decoded) -> list[tuple[str, str]]:
    """(part of the message, what it means), for each part the message has.
    Every fact quoted from the message is a number or a name of word
    characters (decode's patterns), put in code spans."""
    parts = []
    if d.tensor_type is not None:
        shape = "a scalar" if d.shape == () else f"shape `{list(d.shape)}`" if d.shape is not None else "a shape"
        kind = f"{d.dtype} " if d.dtype else ""
        device = {"cpu": "on the CPU", "cuda": "on a CUDA GPU"}.get(d.device, f"on `{d.device}`" if d.device else "")
        hint = ""
        if d.shape is not None and len(d.shape) == 2 and d.kind == "transposed_weight":
            a, b = d.shape
            hint = (f" If it is a transposed weight, look for `nn.Linear({a}, {b})`, whose weight is "
                    f"`[{b}, {a}]`.")
        parts.append((f"[{d.tensor_type} …]",
                      f"The **saved tensor**: a {kind}tensor {device} of {shape}. Autograd kept it "
                      f"for the backward pass.{hint}"))
    if d.producer is not None:
        parts.append((f"output {d.output_index} of {d.producer}",
                      f"What made it: `{d.producer}`, {_PRODUCERS[d.kind]}."))
    elif d.tensor_type is not None:
        parts.append(("(no \"output of\" part)", _LEAF))
    if d.version is not None:
        gap = d.gap
        how = (f"it was saved at version {d.expected_version} and has been written "
               f"{_plural(gap, 'time')} since (every in-place write adds one)")
        if gap is not None and gap <= 0:
            how = (f"it was saved at version {d.expected_version} and its counter now reads "
                   f"{d.version}: not a later write, but a version counter that changed otherwise")
        loop = (" A high version with a gap of 1 points to a tensor written over and over, "
                "like a weight updated by every `optimizer.step()`." if d.version > 3 and gap == 1 else "")
        parts.append((f"is at version {d.version}; expected version {d.expected_version}",
                      f"The **version gap**: {how}.{loop}"))
    if d.hint == "anomaly":
        parts.append(("Hint: enable anomaly detection …",
                      "Anomaly mode on *before* the forward pass shows the line where the tensor "
                      "was saved, not the line that wrote it."))
    elif d.hint == "backtrace":
        parts.append(("Hint: the backtrace further above …",
                      "Anomaly mode was on: the traceback above it is the forward line where the "
                      "tensor was saved, not the line that wrote it."))
    return parts


def likely_causes(d: Decoded) -> list[str]:
    """The likely causes for the message's pattern, most likely first."""
    return [CAUSES[key] for key in d.causes]


def find_the_line() -> str:
    """Markdown: the command that finds the writing line in the reader's own script."""
    return ("To find the line in your own script, run it under fitlab's recorder (nothing you "
            "paste here is run):")


def script_replay_failed(exc: BaseException) -> str:
    """A plain sentence when the worker could not run the blog's script."""
    why = "took too long" if isinstance(exc, TimeoutError) else "could not be run"
    return (f"The blog's script {why} in the worker process this time, so it is not shown; the "
            "views below replay the failure without it. Reload the page to try again.")
