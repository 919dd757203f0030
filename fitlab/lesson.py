"""The words the page says about a run, built from the run's own numbers."""

from __future__ import annotations

import math
import re

import numpy as np

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


def diverged_at(run: Run) -> int | None:
    """The first epoch whose train or test loss is not a finite number
    (NaN or inf: training blew up), or None if every loss is finite."""
    history = run.history
    finite = np.isfinite(history.train_loss) & np.isfinite(history.test_loss)
    if finite.all():
        return None
    return int(history.epoch[~finite].iloc[0])


def divergence_note(run: Run) -> str | None:
    """Markdown saying plainly that and when a run diverged, or None."""
    epoch = diverged_at(run)
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
