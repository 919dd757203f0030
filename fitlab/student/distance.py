"""How far the student's weights are from the teacher's, raw and after
matching hidden units, recorded over training.

Why match. Relabelling the hidden units of a ReLU layer (permuting the rows
of its weight and bias, and the columns of the next layer's weight the same
way) leaves the function unchanged; so a student can compute exactly the
teacher's function, at zero loss, while its raw weights sit far from the
teacher's: at a permuted copy of them.

Which permutations are allowed. Call P_k the relabelling of the k-th hidden
activation (k = 0 after the first layer, k = 1..R after each use of the
shared layer; R = repeats). A layer mapping activation k-1 to k becomes
P_k · W · P_{k-1}ᵀ and its bias P_k · b; the first layer has no input
permutation and the last no output one.

- Untied student: each copy of the shared layer is its own matrix, so the
  P_k are independent.
- Tied student, R >= 2: one matrix S must equal P_k S P_{k-1}ᵀ at every use,
  which for a generic S forces P_0 = P_1 = … = P_R: a single permutation,
  applied to the shared layer's rows AND its columns (P S Pᵀ).
- Tied student, R = 1: the shared layer is used once, so its input and
  output permutations are independent (as untied); R = 0: one permutation,
  between the first and the last layer.

Distances. A layer's distance is the Euclidean norm of (weight, bias)
student minus teacher. An untied student's copies are each compared with the
teacher's one shared layer (the teacher is the untied net whose copies are
all equal). The matched distance uses the permutations that minimise the
whole net's squared distance (the sum over layers); a single layer's matched
distance may exceed its raw one, the total never does.

How they are found. Minimising over tied permutations is a quadratic
assignment problem, so this uses weight matching (Ainsworth et al., "Git
Re-Basin", 2022): coordinate descent, each step an exact linear assignment
(scipy.optimize.linear_sum_assignment) for one P_k with the others fixed (for
the tied shared layer, its other side fixed at the current value). It starts
from the best of: no permutation, a first-layer-forward guess, and the last
recorded epoch's answer. It is exact for a permuted copy of the teacher and
never worse than no matching; in general it is an upper bound of the true
minimum. ReLU's other symmetry (scaling a unit's input weights by a > 0 and
its output weights by 1/a) is not matched.

Cost. A raw record is a few norms; a matched one does a few products and
linear assignments per permutation (tens of milliseconds at width 256). So
the tracker records the raw distance at most `max_points` evenly spaced
epochs (every epoch for runs of up to max_points − 1 epochs) and keeps the
student for matching at matched_points(width) of them, from 21 down to 3 for
wide nets; both always include the first and the last epoch. The matching
runs only when the table is first asked for, each matching starting from the
previous one's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fitlab.engines.blas import one_blas_thread
from fitlab.weights import Layers, teacher_as_student, use_order

MAX_POINTS = 101
# Matching costs linear assignments (about width³ each), far more than the
# raw distance: it is recorded at fewer epochs, fewer still for wide nets,
# so that the records stay a small share of a run's time.
MAX_MATCHED_POINTS = 21
MIN_MATCHED_POINTS = 3
MAX_SWEEPS = 10

def recorded_epochs(epochs: int, max_points: int = MAX_POINTS) -> list[int]:
    """Evenly spaced epochs from 0 to `epochs` inclusive, at most max_points."""
    return sorted({int(e) for e in np.round(np.linspace(0, epochs, min(epochs + 1, max_points)))})


class HiddenUnits:
    """The permutation structure of a student: which permutation relabels
    the input and the output of each listed layer (None: not permuted)."""

    def __init__(self, n_layers: int, repeats: int):
        order = use_order(n_layers, repeats)
        n_hidden = len(order) - 1            # activations between uses
        one_for_all = n_layers == 3 and repeats >= 2   # tied, used twice or more
        group = [0] * n_hidden if one_for_all else list(range(n_hidden))
        self.n_perms = max(group) + 1
        self.sides: list[tuple[int | None, int | None]] = []
        for layer in range(n_layers):
            use = order.index(layer)
            self.sides.append((group[use - 1] if use > 0 else None,
                               group[use] if use < n_hidden else None))

    def apply(self, layers: Layers, perms: list[np.ndarray]) -> Layers:
        """The layers with every hidden unit relabelled: the same function."""
        out = []
        for (name, weight, bias), (p_in, p_out) in zip(layers, self.sides):
            if p_in is not None:
                weight = weight[:, perms[p_in]]
            if p_out is not None:
                weight, bias = weight[perms[p_out]], bias[perms[p_out]]
            out.append((name, weight, bias))
        return out

    def match(self, student: Layers, teacher: Layers,
              start: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Permutations taking the student as close as found to the teacher
        (whole-net squared distance), never further than no permutation.
        `teacher` must be in the student's shape (see teacher_as_student)."""
        width = student[0][1].shape[0]
        candidates = [[np.arange(width)] * self.n_perms, self._forward_guess(student, teacher)]
        if start is not None:
            candidates.append(start)
        best = min(candidates, key=lambda p: squared_distance(self.apply(student, p), teacher))
        return self._descend(student, teacher, list(best))

    def _forward_guess(self, student: Layers, teacher: Layers) -> list[np.ndarray]:
        """Each permutation from the layers that write it and whose input is
        already settled, first layer first: exact for a permuted teacher."""
        perms: list[np.ndarray | None] = [None] * self.n_perms
        for (_, weight, bias), (_, t_weight, t_bias), (p_in, p_out) in zip(student, teacher, self.sides):
            if p_out is None or perms[p_out] is not None or (p_in is not None and perms[p_in] is None):
                continue
            source = weight if p_in is None else weight[:, perms[p_in]]
            perms[p_out] = _assign(t_weight @ source.T + np.outer(t_bias, bias))
        return perms

    def _descend(self, student: Layers, teacher: Layers, perms: list[np.ndarray]) -> list[np.ndarray]:
        best, best_cost = list(perms), squared_distance(self.apply(student, perms), teacher)
        for _ in range(MAX_SWEEPS):
            changed = False
            for k in range(self.n_perms):
                new = _assign(self._gain(k, student, teacher, perms))
                changed |= not np.array_equal(new, perms[k])
                perms[k] = new
            cost = squared_distance(self.apply(student, perms), teacher)
            if cost < best_cost:
                best, best_cost = list(perms), cost
            if not changed:
                break
        return best

    def _gain(self, k: int, student: Layers, teacher: Layers, perms) -> np.ndarray:
        """gain[i, j]: how much matching student unit j to teacher unit i of
        activation k adds to the teacher–student inner product, the other
        permutations held at `perms`."""
        gain = 0.0
        for (_, weight, bias), (_, t_weight, t_bias), (p_in, p_out) in zip(student, teacher, self.sides):
            if p_out == k:
                rows = weight if p_in is None else weight[:, perms[p_in]]
                gain = gain + t_weight @ rows.T + np.outer(t_bias, bias)
            if p_in == k:
                cols = weight if p_out is None else weight[perms[p_out]]
                gain = gain + t_weight.T @ cols
        return gain


def _assign(gain: np.ndarray) -> np.ndarray:
    """perm with perm[i] = the student unit given to teacher unit i."""
    # Imported here: scipy takes longer to import than a default run takes to train.
    from scipy.optimize import linear_sum_assignment

    _, cols = linear_sum_assignment(gain, maximize=True)
    return cols


def squared_distance(student: Layers, teacher: Layers) -> float:
    """Sum over layers of the squared (weight, bias) differences."""
    with np.errstate(over="ignore"):
        return float(sum(np.sum((w - tw) ** 2) + np.sum((b - tb) ** 2)
                         for (_, w, b), (_, tw, tb) in zip(student, teacher)))


def layer_distances(student: Layers, teacher: Layers) -> list[float]:
    """Per layer, the Euclidean norm of (weight, bias) student minus teacher;
    `teacher` in the student's shape. Squares are summed in float64."""
    with np.errstate(all="ignore"):
        return [float(np.sqrt(np.sum(np.square(w - tw, dtype=np.float64))
                              + np.sum(np.square(b - tb, dtype=np.float64))))
                for (_, w, b), (_, tw, tb) in zip(student, teacher)]


def matched_points(width: int) -> int:
    """How many epochs of a run at `width` get a matched distance."""
    scaled = int(MAX_MATCHED_POINTS * (64 / width) ** 3)
    return max(MIN_MATCHED_POINTS, min(MAX_MATCHED_POINTS, scaled))


class DistanceTracker:
    """Records, at a bounded set of epochs, each layer's raw distance from
    the student to the teacher, and keeps the student's layers at a smaller
    set (see matched_points) for the matched distance.

    Engine-agnostic: call record(epoch, ...) for each epoch wants() accepts
    (epoch 0 is before training), with the student's layers as numpy arrays
    in TiedNet.named_layers() order whenever matches(epoch). records() then
    gives the finished, immutable records.
    """

    def __init__(self, teacher: Layers, repeats: int, epochs: int, max_points: int = MAX_POINTS):
        self.teacher, self.repeats = teacher, repeats
        width = teacher[0][1].shape[0]
        self.matched_epochs = set(recorded_epochs(epochs, matched_points(width)))
        self.epochs = set(recorded_epochs(epochs, max_points)) | self.matched_epochs
        self._raw: list[tuple[int, list[float]]] = []
        self._kept: dict[int, Layers] = {}
        self._names: list[str] = []

    def wants(self, epoch: int) -> bool:
        """Whether this epoch is one the tracker records."""
        return epoch in self.epochs

    def matches(self, epoch: int) -> bool:
        """Whether record() at this epoch needs the student's layers."""
        return epoch in self.matched_epochs

    def record(self, epoch: int, student: Layers | None = None, raw: list[float] | None = None) -> None:
        """Store every layer's raw distance at `epoch`: `raw` if the caller
        has them already (the fast engine computes them on its flat buffer),
        else from `student`, which is kept (not copied) when matches(epoch)."""
        if student is not None:
            self._names = [name for name, _, _ in student]
        if raw is None:
            raw = layer_distances(student, teacher_as_student(self.teacher, len(student)))
        if self.matches(epoch):
            if student is None:
                raise ValueError(f"epoch {epoch} is matched: record() needs the student's layers")
            self._kept[epoch] = student
        self._raw.append((epoch, raw))

    def records(self) -> DistanceRecords:
        """What was recorded, as a value whose table() does the matching."""
        return DistanceRecords(self.teacher, self.repeats, tuple(self._names), tuple(self._raw),
                               dict(self._kept))


@dataclass(frozen=True, eq=False)
class DistanceRecords:
    """A run's recorded distances: raw per recorded epoch, and the student's
    layers at the matched epochs. Matching hidden units costs linear
    assignments, more than a default run's whole training, so table() does
    it only when asked, and once (the run's StudentTeacher memoises it)."""

    teacher: Layers
    repeats: int
    names: tuple[str, ...]
    raw: tuple[tuple[int, list[float]], ...]   # (epoch, distance per layer)
    kept: dict[int, Layers]                    # epoch -> student layers to match

    @property
    def nbytes(self) -> int:
        """Bytes held by the kept layers and the raw distances."""
        arrays = [a for layers in self.kept.values() for _, w, b in layers for a in (w, b)]
        return sum(a.nbytes for a in arrays) + 8 * len(self.raw) * len(self.names)

    def table(self) -> pd.DataFrame:
        """epoch, layer, raw, matched: one row per recorded epoch and layer;
        matched is NaN where the student was not kept, or had diverged."""
        units = HiddenUnits(len(self.names), self.repeats)
        teacher = teacher_as_student(self.teacher, len(self.names))
        matched_at, perms = {}, None
        with one_blas_thread():
            for epoch in sorted(self.kept):
                student = self.kept[epoch]
                if all(np.isfinite(w).all() and np.isfinite(b).all() for _, w, b in student):
                    # Each matching starts from the previous one's answer.
                    perms = units.match(student, teacher, perms)
                    matched_at[epoch] = layer_distances(units.apply(student, perms), teacher)
        nan = [float("nan")] * len(self.names)
        return pd.DataFrame(
            [{"epoch": epoch, "layer": name, "raw": r, "matched": m}
             for epoch, raw in self.raw
             for name, r, m in zip(self.names, raw, matched_at.get(epoch, nan))],
            columns=["epoch", "layer", "raw", "matched"])
