"""The verdict of an edit whose reference is the original program with every graph kept
(causes.RETAINED): the detach of a forward shared by two losses, in the first loss only.

The original died because its first backward freed the graph its second needed; kept
(retain_graph=True on every backward), that graph lets the second backward run, and the original
then computes what it was written to compute, plus one thing more: the first backward's gradient
also reaches what made the shared tensor (D's loss into G's weights, in a GAN). The detach cuts
exactly that. So the edited copy is PROVED when each of its backwards computes the reference's
gradient on every weight it reaches (the reference may reach more: the cut path), it reaches every
weight the reference does (a detach where the tensor is made would starve G), and every weight
ends as the reference's (the cut gradient was zeroed before any step used it, as a GAN's
`opt_G.zero_grad()` between D's step and G's backward does). Weights that end otherwise are the cut
gradient's doing: the copy RUNS, saying what the edit changes. Another gradient is no fix.
"""

from __future__ import annotations

import torch

from fitlab.explain.causes import CAUSES, DID_NOT_HELP, PROVED, RUNS
from fitlab.explain.fix.diff import Culprit, ran
from fitlab.explain.fix.rerun import Program, bounded

# Float tolerance of "equal to the reference" (verdict.py's).
RTOL, ATOL = 1e-5, 1e-6
# The reference in words.
KEPT = "your program with every graph kept (retain_graph=True)"


def _gap(a: torch.Tensor, b: torch.Tensor) -> float | None:
    if a.shape != b.shape:
        return None
    return 0.0 if torch.allclose(a, b, rtol=RTOL, atol=ATOL) else float((a - b).abs().max())


def _matched(got: list, want: list) -> float | None:
    """The largest gap between each (key, tensor) of `got` and the closest unused one of `want`
    with its key (0.0: all within tolerance), None if one has no counterpart; `want` may hold more."""
    free, worst = list(want), 0.0
    for key, g in got:
        gaps = [(_gap(g, w), i) for i, (k, w) in enumerate(free) if k == key]
        gaps = [(gap, i) for gap, i in gaps if gap is not None]
        if not gaps:
            return None
        gap, i = min(gaps)
        worst = max(worst, gap)
        free.pop(i)
    return worst


def _calls_gap(rec, ref, calls) -> float | None:
    worst = 0.0
    for call in calls:
        gap = _matched(rec.grads.get(call, []), ref.grads.get(call, [])) if call in ref.grads else None
        worst = None if gap is None or worst is None else max(worst, gap)
    return worst


def judged(program: Program, rec, bound: int, steps: int, timeout: float, keep_from: int, kind: str,
           at: str) -> Culprit:
    """The verdict of an edited copy that ran to the bound (or to its end), against the reference run
    to the same bound, each backward's gradients compared from call `keep_from` on: up to the one that
    failed first (past it, weights that ended otherwise make other gradients), then the weights, then,
    for weights that ended equal, the calls past it."""
    _, _, ref = bounded(program, {}, bound, timeout, keep_from=keep_from, retain=True, weights=True)
    until = ran(rec.backwards, rec.stopped, bound, steps)
    failed = min(bound - steps, rec.backwards)
    worst = _calls_gap(rec, ref, range(max(keep_from, 1), failed + 1))
    got, want = ([((s, f), w) for s, f, w in r.weights()] for r in (rec, ref))
    if worst == 0.0 and len(got) < len(want):
        return Culprit(kind, at, DID_NOT_HELP, f"the error is gone ({until}), but {len(want) - len(got)} of the "
                       f"weights {KEPT} differentiates get no gradient at all: this edit cuts a gradient your "
                       "program needs")
    weights = _matched(got, want) if worst == 0.0 else None
    if weights == 0.0 and len(got) == len(want):
        worst = _calls_gap(rec, ref, range(failed + 1, rec.backwards + 1))
    if worst != 0.0:
        differ = "other gradients" if worst is None else f"gradients off by up to {worst:.3g}"
        return Culprit(kind, at, DID_NOT_HELP, f"the error is gone ({until}), but it computes {differ} than {KEPT} "
                       "on the weights it reaches: this edit changes what your program computes")
    if weights == 0.0 and len(got) == len(want):
        return Culprit(kind, at, PROVED, f"the error is gone ({until}); each backward computes the gradients of {KEPT} "
                       "on the weights it reaches, and every weight ends as there, to float tolerance: the "
                       "gradient the detach cuts never reached a step")
    off = "other weights" if weights is None else f"weights off by up to {weights:.3g}"
    return Culprit(kind, at, RUNS, f"the error is gone ({until}); up to the backward that failed each computes the "
                   f"gradients of {KEPT} on the weights it reaches, but it ends with {off}: there the gradient the "
                   f"detach cuts reached a step. The edit changes that: {CAUSES[kind].changes}")
