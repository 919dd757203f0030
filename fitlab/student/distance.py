"""How far the student's weights are from the teacher's, raw and after
matching hidden units, recorded over training.

Why and how hidden units are matched: fitlab.student.matching. The matched
distance is the minimum over relabellings where that search is cheap (the
tied net up to width 8, see HiddenUnits.exact), an upper bound of it beyond;
DistanceRecords.exact says which.

Distances. A layer's distance is the Euclidean norm of (weight, bias)
student minus teacher. An untied student's copies are each compared with the
teacher's one shared layer (the teacher is the untied net whose copies are
all equal). The matched distance uses the permutations that minimise the
whole net's squared distance (the sum over layers), or beyond the exact
search those weight matching finds; a single layer's matched distance may
exceed its raw one, the total never does.

Cost. A raw record is a few norms; a matched one does a few products and
linear assignments per permutation (tens of milliseconds at width 256, up to
about 0.1 s for an exact search). So the tracker records the raw distance at
most `max_points` evenly spaced epochs (every epoch for runs of up to
max_points − 1 epochs) and keeps the student for matching at
matched_points(width, units) of them, from 21 down to 3 for the costliest
matchings (wide nets; the exact search at width 8); both always include the
first and the last epoch. The matching runs only when the table is first
asked for, each matching starting from the previous one's answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fitlab.numerics.blas import one_blas_thread
from fitlab.student.matching import HiddenUnits
from fitlab.weights import Layers, teacher_as_student

MAX_POINTS = 101
# Matching costs linear assignments (about width³ each), far more than the
# raw distance: it is recorded at fewer epochs, fewer still for wide nets,
# so that the records stay a small share of a run's time.
MAX_MATCHED_POINTS = 21
MIN_MATCHED_POINTS = 3


def recorded_epochs(epochs: int, max_points: int = MAX_POINTS) -> list[int]:
    """Evenly spaced epochs from 0 to `epochs` inclusive, at most max_points."""
    return sorted({int(e) for e in np.round(np.linspace(0, epochs, min(epochs + 1, max_points)))})


def layer_distances(student: Layers, teacher: Layers) -> list[float]:
    """Per layer, the Euclidean norm of (weight, bias) student minus teacher;
    `teacher` in the student's shape. Squares are summed in float64."""
    with np.errstate(all="ignore"):
        return [float(np.sqrt(np.sum(np.square(w - tw, dtype=np.float64))
                              + np.sum(np.square(b - tb, dtype=np.float64))))
                for (_, w, b), (_, tw, tb) in zip(student, teacher)]


def matched_points(width: int, units: HiddenUnits | None = None) -> int:
    """How many epochs of a run at `width` get a matched distance: fewer the
    more one matching costs (HiddenUnits.cost; `units` default to the tied
    net's), as many as a weight matching at width 64 can have."""
    cost = (units or HiddenUnits(3, 2)).cost(width)
    scaled = int(MAX_MATCHED_POINTS * 64**3 / cost)
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

    def __init__(self, teacher: Layers, repeats: int, epochs: int, max_points: int = MAX_POINTS,
                 tied: bool = True):
        self.teacher, self.repeats = teacher, repeats
        width = teacher[0][1].shape[0]
        n_layers = (3 if repeats else 2) if tied else 2 + repeats   # as TiedNet.named_layers lists them
        units = HiddenUnits(n_layers, repeats)
        self.matched_epochs = set(recorded_epochs(epochs, matched_points(width, units)))
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
    def exact(self) -> bool:
        """Whether the matched distance is the minimum over relabellings of
        the hidden units, else an upper bound of it (fitlab.student.matching)."""
        return HiddenUnits(len(self.names), self.repeats).exact(self.teacher[0][1].shape[0])

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
