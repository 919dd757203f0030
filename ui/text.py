"""Every sentence the page says, built from the library's facts: the lesson, the
notes under the charts, the fix gallery's verdicts."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from fitlab.budget import OverBudget
from fitlab.failure.fixes import BLOG, DETACH, FixOutcome, gradient_gap
from fitlab.run import Run

_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")
_SHAPE = re.compile(r"\[torch\.\w+ (\[[\d, ]*\])\]")

FIX_CODE = """\
labels = net(X).detach().reshape((-1, 1))   # cut the labels off the teacher's graph
# or never build that graph at all:
with torch.no_grad():
    labels = net(X).reshape((-1, 1))"""


# The page's first words. On a phone the sidebar starts closed, so the
# control they name is not in sight: say where it is, and link the lesson.
INTRO = (
    "A small net with one **shared layer** makes the labels (the *teacher*); the same net, "
    "re-initialised in place, learns them back (the *student*). To meet PyTorch's most "
    "searched autograd error, and see why, untick **Detach the labels** in the sidebar "
    "(on a phone, **>>** at the top left opens it), or open [the lesson](?detach=false).")

# The sidebar's label of each Config field (the library's messages name fields).
FIELD_LABELS = {
    "width": "Hidden width", "shared_repeats": "Shared layer repeats", "lr": "Learning rate",
    "batch_size": "Batch size", "detach": "Detach the labels", "epochs": "Advanced › Epochs",
    "seed": "Advanced › Seed", "n_train": "Advanced › Training rows",
    "tied": "Advanced › Tie the shared layer", "engine": "Advanced › Engine",
    "n_samples": "rows in all", "in_features": "input features",
}


def over_budget_message(refused: OverBudget) -> str:
    """Markdown: why settings over the work budget do not run, in the
    sidebar's own words."""
    named = ", ".join(f"**{FIELD_LABELS.get(field, field)}** {value}"
                      for field, value in refused.fields.items())
    lower = "**Advanced › Epochs**, **Hidden width** or **Shared layer repeats**"
    if refused.cells == 1:
        return (f"These settings are too much work for this page: about {refused.seconds:.0f} s "
                f"of training, over the {refused.budget:g} s one run may take here ({named}). "
                f"The work grows as epochs × batches × width²: lower {lower}, or raise "
                f"**Batch size**.")
    return (f"This sweep is too much work for this page: {refused.cells} cells, about "
            f"{refused.seconds:.0f} s of training, over the {refused.budget:g} s a sweep may "
            f"take here (its widest cell: {named}). Sweep fewer values, or lower {lower}.")


# What a sweep axis compares: only lr keeps the task fixed (fitlab.blog.setup
# draws the teacher, the data and the student from the seed, at the width).
SWEEP_AXIS_NOTES = {
    "lr": ("**lr** changes only the step size: the teacher, the data and the student's "
           "start stay the same, so cells compare fairly and the best lr is a real answer."),
    "seed": ("**seed** draws a new teacher, new data and a new start: read the spread down "
             "the seeds as how much a result owes to luck, not as a seed to choose; teach "
             "against the worst seeds as much as the best."),
    "width": ("**width** changes the teacher too (it is the same net): each width is a "
              "different task, so a narrow width may win because its task is easier, not "
              "because it learns better."),
}


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


def approach_note(distances: pd.DataFrame, history: pd.DataFrame) -> str:
    """How far the student came toward the teacher, in numbers, against how
    far its loss fell; and whether matching hidden units changed anything.
    Empty for a run whose weights did not stay finite (divergence_note says why)."""
    raw = distances.pivot(index="epoch", columns="layer", values="raw")
    total = np.sqrt((raw ** 2).sum(axis=1, min_count=raw.shape[1]))
    loss = history.train_loss
    if not (np.isfinite(total).all() and np.isfinite(loss).all() and loss.iloc[-1] > 0):
        return ""
    moved = 1 - total.iloc[-1] / total.iloc[0]
    closer = "closer to" if moved >= 0 else "further from"
    note = (f"Over training the student's weights came {abs(moved):.1%} {closer} the teacher's "
            f"(all layers, raw) while its train loss fell {loss.iloc[0] / loss.iloc[-1]:,.0f}-fold: "
            "fitting the labels does not take the teacher's weights, hence the zoomed axis.")
    matched = distances.dropna(subset=["matched"])
    if np.allclose(matched["matched"], matched["raw"], rtol=1e-9, atol=0):
        note += (" Matched equals raw at every epoch it was computed: the matching found no "
                 "relabelling of the hidden units that brings this student nearer, so each "
                 "dashed line lies under its solid one.")
    return note


def recording_note(distances: pd.DataFrame, epochs: int) -> str:
    """In words, at which epochs a run's distances were recorded."""
    raw = distances["epoch"].nunique()
    matched = distances.dropna(subset=["matched"])["epoch"].nunique()
    where = "every epoch" if raw == epochs + 1 else f"{raw} evenly spaced epochs"
    return (f"Raw distance recorded at {where}, matched at {matched} of them (matching "
            f"costs linear assignments, so wide nets get fewer).")


def agreement(max_difference: float) -> str:
    """How closely two sets of gradients agree, as the end of a sentence."""
    if max_difference == 0:
        return "are **exactly equal**, entry for entry"
    return f"differ by at most **{max_difference:.3g}**"


def student_caption(run: Run) -> str:
    """What the Student table holds: the trained weights, or where a failed run stopped."""
    if run.error is None:
        return "After training, started from a fresh Kaiming init."
    if (run.error.epoch, run.error.batch) == (1, 1):
        return ("The fresh Kaiming init: training failed at its first backward(), so no "
                "SGD step ever changed these weights.")
    return (f"Where training stopped: after the steps before epoch {run.error.epoch}, "
            f"batch {run.error.batch}.")


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
