"""Every sentence the page says, built from the library's facts: the lesson, the
notes under the charts, the fix gallery's verdicts."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from fitlab.blog import BLOG_ERROR_MESSAGE
from fitlab.budget import OverBudget
from fitlab.explain import Decoded, decode
from fitlab.failure.autopsy import Autopsy
from fitlab.failure.explained import SCRIPT_NAME, ExplainedBlog, Mark
from fitlab.failure.fixes import BLOG, DETACH, FixOutcome, gradient_gap
from fitlab.failure.graph import named_in_error
from fitlab.failure.vivid import NETS, VividCase
from fitlab.jobs import Place, ServerBusy
from fitlab.run import Run

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


def error_explanation(run: Run, found: Autopsy) -> str:
    """Markdown: what really went wrong in a failed run, quoting torch's
    message for the shape and the two version numbers, and the replay
    (`found`, fitlab.failure.autopsy) for what was saved and how the saved
    view's history changed."""
    facts = decode(run.error.message)
    shape = facts.shape if facts is not None else None
    tensor = f"The `{list(shape)}` tensor torch names" if shape is not None else "The tensor torch names"
    if facts is not None and facts.version is not None and facts.expected_version is not None:
        moved = (f"It was saved at version {facts.expected_version} and is now at version "
                 f"{facts.version}.")
    else:
        moved = "Its version counter moved on after it was saved."
    ledger = found.ledger
    saved_weights = [p for p, how in zip(ledger.parameter, ledger["saved by the labels' graph"])
                     if how != "not saved"]
    unsaved = [p for p in ledger.parameter if p not in saved_weights]
    culprit = named_in_error(found.graph, found.error or "")
    history = ""
    if culprit is not None and culprit.saved_grad_fn != culprit.grad_fn:
        history = (f" When it was saved, that view's own history (`grad_fn`) was "
                   f"`{culprit.saved_grad_fn}`; after the in-place write to its base it is "
                   f"`{culprit.grad_fn}`: autograd regenerates a view's history once its base is "
                   "written in place, so the word in the message is itself a trace of the write.")
    return f"""\
**What actually went wrong**

1. The labels were computed by the teacher and **not detached**, so every label
   still carries the teacher's autograd graph. To differentiate later, that
   graph *saved* each layer's input and, for every layer after the first, its
   weight transposed (`weight.t()`, a view): {_names(saved_weights)}.
   Not saved: {_names(unsaved)} (a bias is not needed to differentiate a
   product, and the first layer's weight only for a gradient of X, which needs
   none). {tensor} is the last layer's saved `weight.t()`.{history}
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


def _names(parameters: list[str]) -> str:
    return ", ".join(f"`{p}`" for p in parameters) or "none"


_ORIGIN = re.compile(r"which is output \d+ of (\w+),")
_HINT = re.compile(r"with (torch\.autograd\.set_detect_anomaly\([^)]*\))")


def wording_note(message: str, torch_version: str) -> str | None:
    """Markdown: how this torch's wording of the error differs from the
    blog's (BLOG_ERROR_MESSAGE), or None if it reads the same."""
    ours, theirs = (_ORIGIN.search(message), _HINT.search(message)), (
        _ORIGIN.search(BLOG_ERROR_MESSAGE), _HINT.search(BLOG_ERROR_MESSAGE))
    differences = [f"`{b.group(1)}` where the blog's reads `{a.group(1)}`"
                   for a, b in zip(theirs, ours) if a and b and a.group(1) != b.group(1)]
    if not differences:
        return None
    return (f"**Comparing with the blog's message?** Torch {torch_version} words it a little "
            f"differently from the older torch the blog ran: {' and '.join(differences)}. "
            "Same error, same cause.")


# The blog "enabled" debugging with this; torch's hint means anomaly detection.
GRAD_MODE_NOTE = (
    "The blog says it turned on gradient tracking with `torch.set_grad_enabled(True)` to find "
    "the line. That changes nothing here: gradient recording is already on by default "
    "(`torch.is_grad_enabled()` is `True`), and it does not turn on anomaly detection. The "
    "hint's tool is `torch.autograd.set_detect_anomaly(True)`, and it helps only if it is on "
    "before the labels are made:")


def blog_figure_note(run: Run) -> str | None:
    """One sentence on the blog's test figure versus the true test MSE; None
    when there is no figure to compare (a diverged run's is NaN or inf)."""
    config = run.config
    if run.blog_test_loss is None or not math.isfinite(run.blog_test_loss):
        return None
    n_batches = math.ceil(config.n_test / config.batch_size)
    true_mse = run.history.test_loss.iloc[-1]
    if n_batches == 1:
        return (f"The test loss here is the true mean squared error over the {config.n_test} test "
                f"rows ({true_mse:.4g}); with one test batch, the blog's script prints the same "
                f"figure ({run.blog_test_loss:.4g}).")
    return (f"The test loss here is the true mean squared error over the {config.n_test} "
            f"test rows ({true_mse:.4g}); the blog's script would print "
            f"{run.blog_test_loss:.4g}, because it adds up the {n_batches} per-batch means "
            f"instead of averaging them.")


def r_squared_text(value: float) -> str:
    """R² as the page shows it: two decimals, or "n/a" when undefined."""
    return "n/a" if math.isnan(value) else f"{value:.2f}"


def fit_note(run: Run) -> tuple[str, bool] | None:
    """(markdown, worse) comparing the final student with the constant
    predictor; worse is True when the student's test MSE is above the
    constant's. None for a diverged run (its losses are not numbers)."""
    if run.diverged_at is not None:
        return None
    base, last = run.baseline, run.history.iloc[-1]
    test_r2 = r_squared_text(base.r_squared(last.test_loss, "test"))
    constant = (f"Predicting the training labels' mean ({base.constant:.4g}) for every row, with no "
                f"training at all, scores test MSE {base.test_mse:.4g} and train MSE {base.train_mse:.4g} "
                "(the dashed lines on the chart)")
    if last.test_loss <= base.test_mse:
        times = base.test_mse / last.test_loss if last.test_loss > 0 else math.inf
        return (f"{constant}; the student's test MSE is {times:.3g}× lower (test R² {test_r2}).", False)
    fall = run.history.train_loss.iloc[0] / last.train_loss if last.train_loss > 0 else math.inf
    fell = f"{fall:,.0f}" if fall >= 10 else f"{fall:.2g}"
    underfit = last.train_loss > base.train_mse
    train_side = "worse there too" if underfit else "better there"
    if underfit:
        helps = ("It has not yet fitted even its own training rows: more epochs (Advanced › Epochs), "
                 "or a larger learning rate while training stays stable, let it go further.")
    else:
        helps = (f"It fits its {run.config.n_train} training rows better than the constant but not the "
                 f"test rows: {len(run.student_params)} weights have many ways to fit few rows. More "
                 "training rows (Advanced › Training rows) constrain it more.")
    return (f"**The student does worse than a constant.** {constant}. The student's test MSE, "
            f"{last.test_loss:.4g}, is {base.times_constant(last.test_loss, 'test'):.3g}× the constant's "
            f"(test R² {test_r2}); on the training rows it scores {last.train_loss:.4g}, {train_side}. "
            f"Its train loss fell {fell}-fold, which says it improved on its random start, not that "
            f"it fits. {helps}", True)


def divergence_note(run: Run) -> str | None:
    """Markdown saying plainly that and when a run diverged, or None."""
    epoch = run.diverged_at
    if epoch is None:
        return None
    drawn = "epoch 0" if epoch == 1 else f"epochs 0 to {epoch - 1}"
    return (f"**Training diverged at epoch {epoch}**: the loss overflowed to infinity or "
            f"became NaN, because each SGD step overshot by more than the last (learning "
            f"rate {run.config.lr:g} is too large for this net). The chart draws the finite "
            f"losses ({drawn}) and marks epoch {epoch} in red; the tables and the CSV keep "
            "everything, NaN and inf included.")


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


def watch_note(run: Run) -> str:
    """How to use the scrubbed pictures, and what was recorded, in words."""
    from fitlab.watch_charts import DIAGRAM_MAX_WIDTH, HEATMAP_MAX_UNITS

    frames, config = run.frames, run.config
    n = len(frames.epochs)
    where = "every epoch" if n == config.epochs + 1 else f"{n} evenly spaced epochs (the nearest one is shown)"
    notes = [f"Drag the epoch slider under the pictures, or press Play: every picture moves to that "
             f"epoch in your browser, nothing is recomputed. The student was recorded at {where}; "
             f"epoch 0 is the fresh student. Weights and biases share one colour scale, red below 0, "
             f"blue above, white at 0, the same for teacher and student: equal colours, equal values."]
    if config.width > HEATMAP_MAX_UNITS:
        notes.append(f"At width {config.width} each heatmap shows its matrix's top-left "
                     f"{HEATMAP_MAX_UNITS} × {HEATMAP_MAX_UNITS} corner.")
    if config.width > DIAGRAM_MAX_WIDTH:
        notes.append(f"The net's diagram is drawn for widths up to {DIAGRAM_MAX_WIDTH}.")
    return " ".join(notes)


def parameter_tables_note(uncoloured: bool) -> str:
    """What the parameter matrices show, and where the tidy values are."""
    colours = ("Too many cells to colour at this width." if uncoloured
               else "Blue above 0, red below, the same scale for teacher and student.")
    return (f"Each layer as its matrix: a row per output unit, a column per input, then the bias. "
            f"{colours} Compare runs › the parameters CSV has every value in tidy form "
            f"(parameter, uses, row, col, value).")


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


# Why the variants that keep the labels' graph fail at batch 2.
FREED_GRAPH = ("all 200 labels hang off one graph (the teacher's forward pass over all of X), and "
               "the first backward() frees what it saved; batch 2's labels need it again")


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




def verdict(outcome: FixOutcome, blog: FixOutcome, detached: FixOutcome) -> str:
    """A scannable judgement built from what the runs measured, against the
    blog's run and the detached run: ✓ a fix, ✗ no fix, ⚠ runs with a catch
    (the catch stated)."""
    err = outcome.error
    gap = gradient_gap(outcome, detached)
    wrong = gap is not None and gap > 1e-6
    catches = []
    if wrong:
        catches.append(f"the first step's gradients are wrong (off by up to {gap:.3g}): backward "
                       "also runs through the labels' graph into the same weights, with the values "
                       "the re-init wrote, and the version check cannot see it")
    if err is None:
        same = outcome.history.equals(detached.history) and outcome is not detached
        if outcome.teacher_gradient is not None:
            catches.append(f"the teacher's weights get gradients too (norm {outcome.teacher_gradient:.3g})")
        if outcome.variant.retain_graph:
            catches.append("every backward() also walks the teacher's graph of all 200 labels again, "
                           "and keeps it in memory")
        if wrong:
            last, right = outcome.history.iloc[-1], detached.history.iloc[-1]
            catches.append(f"it trains on wrong gradients to the end (final train MSE "
                           f"{last.train_loss:.4g}, against {right.train_loss:.4g} with .detach())")
        if not catches:
            return "✓ fixes it" + ("; numbers identical to .detach()" if same else "")
        return ("⚠ runs" + ("; numbers identical to .detach()" if same else "") + ", but: "
                + "; ".join(catches))
    if outcome is blog:
        return f"✗ fails at epoch {err.epoch}, batch {err.batch}: the in-place error"
    if blog.error is not None and err.message == blog.error.message:
        return "✗ no fix: the blog's very error"
    where = f"epoch {err.epoch}, batch {err.batch}"
    passed = "the first step passes, then it fails" if (err.epoch, err.batch) != (1, 1) else "it fails"
    why = f": {FREED_GRAPH}" if err.message.startswith("Trying to backward through the graph a second time") else ""
    notes = [f"✗ no fix: {passed} at {where} with a different error{why}", *catches]
    if outcome.teacher_gradient is not None:
        notes.append(f"the teacher's weights got gradients (norm {outcome.teacher_gradient:.3g})")
    return "; ".join(notes)


def gallery_table(outcomes: tuple[FixOutcome, ...]) -> pd.DataFrame:
    """variant, code change, outcome, verdict: one row per outcome."""
    # By value: outcomes that went through a cache hold unpickled copies of the variants.
    blog = next(o for o in outcomes if o.variant == BLOG)
    detached = next(o for o in outcomes if o.variant == DETACH)
    return pd.DataFrame([{"variant": o.variant.name, "code change": o.variant.change,
                          "outcome": outcome_text(o, blog), "verdict": verdict(o, blog, detached)}
                         for o in outcomes])


def vivid_table(cases: tuple[VividCase, ...]) -> pd.DataFrame:
    """net, edit, what made label (and what it saved), outcome: one row per case."""
    return pd.DataFrame([{
        "net": c.net, "in-place edit of label": c.edit,
        "label made by (saved)": f"{c.node} ({', '.join(c.saved) or 'nothing'})",
        "loss.backward()": "✓ runs" if c.error is None else f"✗ RuntimeError: {_tensor_part(c.error)}",
    } for c in cases])


def _tensor_part(message: str) -> str:
    """The part of an in-place error naming the tensor and its versions."""
    found = re.search(r"\[torch\.\w+ \[[\d, ]*\]\], which is output \d+ of \w+, is at version \d+; "
                      r"expected version \d+", message)
    return found.group(0) if found else message


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


def waiting_in_line(what: str, place: Place, slots: int) -> str:
    """Plain text: a job waiting for a free slot, and its place in line."""
    others = place.running + place.ahead
    return (f"Waiting to start {what}: the server runs {slots} at once, and "
            f"{others} other {'job is' if others == 1 else 'jobs are'} before yours "
            f"({place.running} running, {place.ahead} waiting ahead of you).")


def server_busy(what: str, busy: ServerBusy) -> str:
    """Plain text: a job turned away because the line is full."""
    return (f"The server is too busy to start {what} now: {busy.waiting} jobs are already "
            "waiting. Try again in a minute; your settings stay in the address bar.")


IGNORED_HEADLINE = ("**Some of this link was ignored.** The page runs without it; "
                    "here is what it left out, and what it uses instead:")
# How much of a stranger's URL the warning shows.
SHOWN_PARTS, SHOWN_CHARS = 8, 60


def ignored_lines(problems, unseen: int = 0) -> list[str]:
    """Plain-text lines (for st.text, never markdown): each ignored part of
    a link (ui.share.Ignored), its text from the URL cut short with its
    control characters made visible, and what the page uses instead; past
    SHOWN_PARTS, one line that counts the rest (with `unseen` parts the page
    did not even keep)."""
    lines = [f"• {_url_part(p.key, p.values)}: {_ignored_because(p)}." for p in problems[:SHOWN_PARTS]]
    more = len(problems) - SHOWN_PARTS + unseen
    if more > 0:
        lines.append(f"• … and {more:,} more {'part' if more == 1 else 'parts'} of the link, "
                     "not settings of this page or not usable; ignored.")
    return lines


def _ignored_because(problem) -> str:
    if problem.kind == "unknown":
        return "not a setting of this page; ignored"
    used = _setting_value(problem.used)
    instead = f"the default, {used}" if problem.default else used
    if problem.kind == "repeated":
        return f"given {len(problem.values)} times; using {instead}"
    return f"not a value this setting can take; using {instead}"


def _url_part(key: str, values: tuple[str, ...]) -> str:
    shown = _visible(key)
    if not values or values == ("",):
        return shown if not values else f"{shown}="
    first = f"{shown}={_visible(values[0])}"
    return first if len(values) == 1 else f"{first} (and {len(values) - 1} more)"


def _visible(text: str) -> str:
    """`text` on one line, control characters as escapes (a newline as \\n),
    cut to SHOWN_CHARS."""
    escaped = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return escaped if len(escaped) <= SHOWN_CHARS else f"{escaped[:SHOWN_CHARS]}… (cut short)"


def _setting_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


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
