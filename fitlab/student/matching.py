"""Matching hidden units: the relabelling of the student's hidden units that
brings its weights nearest the teacher's, exact where that is cheap.

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

What is minimised. The whole net's squared distance Σ_layers ‖student −
teacher‖² over (weight, bias). Relabelling does not change either net's
norm, so this is maximising the inner product

    Σ_layers ⟨T, P_out · W · P_inᵀ⟩ + ⟨t, P_out · b⟩.

A layer's term is linear in P_out once P_in is fixed, and linear in P_in once
P_out is fixed; only a layer whose two sides are free at once (two different
P's, or the tied P S Pᵀ) makes the problem quadratic.

How it is solved exactly. Fix every P of a vertex cover C of the graph whose
edges are those layers (the tied shared layer is a loop at P: P must be in C).
Each remaining P then appears only in linear terms: the best one for the
fixed rest is a linear assignment, gain[i, j] = what matching student unit j
to teacher unit i adds. So the minimum is the best, over all (w!)^|C|
choices of the fixed P's, of the sum of those assignments' values. The
smallest cover is found by trying subsets. Costs: R = 0 has no edge (C is
empty: one linear assignment, exact at every width); a tied net with R >= 2,
or a chain of 2 or 3 P's (R = 1, untied R = 2), has |C| = 1; an untied net
with R shared copies has |C| = ⌊(R + 1) / 2⌋.

When it runs. The search's work is about (w!)^|C| choices × w² numbers ×
(1 + free P's); it runs when that is at most the tied net's at width 8
(8! · 8², 20 to 100 ms per matching): the tied net up to width 8, one shared
use or two untied copies up to width 7, three or four copies up to width 5,
five or six up to 4, seven or eight up to 3, no shared layer at every width.
Each choice is first bounded (each free unit's best gain, ignoring that two
may want the same unit); choices are then solved best bound first, 64 at a
time, each assignment's value from a dynamic programme over subsets of units
(2^w · w steps), until no bound beats the best value found (which starts at
weight matching's answer, below). Only the winner's assignments go to
scipy.optimize.linear_sum_assignment.

Beyond that: a heuristic, an upper bound of the true minimum. Weight
matching (Ainsworth et al., "Git Re-Basin", 2022): coordinate descent, each
step an exact linear assignment for one P_k with the others fixed (for the
tied shared layer, its other side fixed at the current value), from the best
of: no permutation, a first-layer-forward guess, and the previous epoch's
answer. It is exact for a permuted copy of the teacher and never worse than
no matching. `HiddenUnits.exact(width)` says which of the two a net gets.

ReLU's other symmetry (scaling a unit's input weights by a > 0 and its
output weights by 1/a) is not matched.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from fitlab.weights import Layers, use_order

# The most work (choices × w² × (1 + free permutations)) searched exactly:
# the tied net's search at width 8, 20 to 100 ms (see exact()).
EXACT_WORK = math.factorial(8) * 8**2
MAX_SWEEPS = 10
_CHUNK = 4096                       # choices bounded at once: keeps the memory to tens of MB
_GROUP = 64                         # choices solved at once, best bound first


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
        self.cover = _smallest_cover(self.n_perms, [s for s in self.sides if None not in s])

    def _search_work(self, width: int) -> int:
        """The exact search's choices × w² × (1 + free permutations)."""
        return math.factorial(width) ** len(self.cover) * width**2 * (self.n_perms - len(self.cover) + 1)

    def exact(self, width: int) -> bool:
        """Whether match() finds the true minimum at this width (else an upper bound)."""
        return self._search_work(width) <= EXACT_WORK

    def cost(self, width: int) -> int:
        """About how many numbers one match() touches: the exact search's
        work, or weight matching's w³."""
        return self._search_work(width) if self.exact(width) else width**3

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
        """Permutations taking the student as close to the teacher (whole-net
        squared distance) as exact() says: the nearest, or as near as weight
        matching gets from `start` and two guesses; never further than no
        permutation. `teacher` must be in the student's shape (see
        weights.teacher_as_student)."""
        width = student[0][1].shape[0]
        identity = [np.arange(width)] * self.n_perms
        candidates = [identity, self._forward_guess(student, teacher)]
        if start is not None:
            candidates.append(start)
        best = min(candidates, key=lambda p: squared_distance(self.apply(student, p), teacher))
        found = self._descend(student, teacher, list(best))
        if self.exact(width):
            found = self._search(student, teacher, width, found)
        # Ties (a student with equal units) keep the labels it has.
        if squared_distance(self.apply(student, found), teacher) < squared_distance(student, teacher):
            return found
        return identity

    def _search(self, student: Layers, teacher: Layers, width: int,
                guess: list[np.ndarray]) -> list[np.ndarray]:
        """The exact minimum: every choice of the cover's permutations, the
        others by linear assignment (see the module's docstring), as branch
        and bound: each choice gets a bound (every free unit's best gain,
        ignoring that two may want the same unit); choices are solved in
        order of their bound until the next bound is no better than the best
        value found, which starts at `guess`'s."""
        best = {k: guess[k][None] for k in self.cover}
        best_value = self._values(*self._terms(student, teacher, best, width))[0]
        if self.cover:
            every = _permutations(width)
            digits = (len(every),) * len(self.cover)

            def choose(index: np.ndarray) -> dict:
                return {k: every[d] for k, d in zip(self.cover, np.unravel_index(index, digits))}

            n_choices = len(every) ** len(self.cover)
            bounds = np.empty(n_choices)
            for start in range(0, n_choices, _CHUNK):
                index = np.arange(start, min(start + _CHUNK, n_choices))
                value, gains = self._terms(student, teacher, choose(index), width)
                bounds[index] = value + sum(np.minimum(g.max(axis=2).sum(axis=1), g.max(axis=1).sum(axis=1))
                                            for g in gains.values())
            order = np.argsort(-bounds, kind="stable")
            for start in range(0, n_choices, _GROUP):
                index = order[start:start + _GROUP]
                index = index[bounds[index] > best_value]
                if not len(index):
                    break
                value = self._values(*self._terms(student, teacher, choose(index), width))
                top = int(np.argmax(value))
                if value[top] > best_value:
                    best_value, best = value[top], choose(index[top:top + 1])
        _, gains = self._terms(student, teacher, best, width)
        perms = {k: p[0] for k, p in best.items()} | {k: _assign(g[0]) for k, g in gains.items()}
        return [perms[k] for k in range(self.n_perms)]

    def _terms(self, student: Layers, teacher: Layers, fixed: dict, width: int):
        """For a batch of choices of the fixed permutations (k -> (B, w)):
        the inner product's terms that they settle (B,), and each free
        permutation's gain matrices (B, w teacher units, w student units)."""
        batch = len(next(iter(fixed.values()))) if fixed else 1
        value = np.zeros(batch)
        gains = {k: np.zeros((batch, width, width)) for k in range(self.n_perms) if k not in fixed}
        units = np.arange(width)
        for (_, weight, bias), (_, t_weight, t_bias), (p_in, p_out) in zip(student, teacher, self.sides):
            w, b = weight.astype(np.float64), bias.astype(np.float64)
            t, tb = t_weight.astype(np.float64), t_bias.astype(np.float64)
            rows = np.outer(tb, b)        # the bias's term, linear in P_out
            if p_in is None:              # gain[i, j] = ⟨T row i, W row j⟩ + t_i b_j
                rows = rows + t @ w.T
            if p_out is None:             # gain[m, j] = ⟨T column m, W column j⟩
                value += b @ tb
                if p_in in fixed:
                    value += (t.T @ w)[units, fixed[p_in]].sum(axis=1)
                else:
                    gains[p_in] += t.T @ w
            elif p_in is None:
                if p_out in fixed:
                    value += rows[units, fixed[p_out]].sum(axis=1)
                else:
                    gains[p_out] += rows
            elif p_in in fixed and p_out in fixed:
                value += (np.einsum("im,bim->b", t, w[fixed[p_out][:, :, None], fixed[p_in][:, None, :]])
                          + rows[units, fixed[p_out]].sum(axis=1))
            elif p_in in fixed:           # rows free, columns chosen
                gains[p_out] += _times_each(t, w.T[fixed[p_in]]) + rows
            else:                         # columns free, rows chosen
                gains[p_in] += _times_each(t.T, w[fixed[p_out]])
                value += rows[units, fixed[p_out]].sum(axis=1)
        return value, gains

    @staticmethod
    def _values(value: np.ndarray, gains: dict) -> np.ndarray:
        """The settled terms plus each free permutation's best assignment."""
        for gain in gains.values():
            value = value + (_assignment_values(gain) if len(gain[0]) <= 8 else _assign_value(gain[0]))
        return value

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


def _times_each(a: np.ndarray, batch: np.ndarray) -> np.ndarray:
    """a @ batch[k] for every k, as one 2-D product: numpy's batched matmul
    of many 8 × 8 matrices costs several times more."""
    n, rows, cols = batch.shape
    side = batch.transpose(1, 0, 2).reshape(rows, n * cols)
    return (a @ side).reshape(len(a), n, cols).transpose(1, 0, 2)


@functools.cache
def _permutations(width: int) -> np.ndarray:
    """Every permutation of range(width), one a row (read-only: shared)."""
    every = np.array(list(itertools.permutations(range(width))), dtype=np.intp)
    every.flags.writeable = False
    return every


def _smallest_cover(n_perms: int, edges: list[tuple[int, int]]) -> tuple[int, ...]:
    """The smallest set of permutations touching every edge (a loop needs its own)."""
    for size in range(n_perms + 1):
        for cover in itertools.combinations(range(n_perms), size):
            if all(a in cover or b in cover for a, b in edges):
                return cover
    raise AssertionError("the set of all permutations covers every edge")


def _assignment_values(gain: np.ndarray) -> np.ndarray:
    """max over permutations p of Σ_i gain[:, i, p[i]], for a batch (B, w, w)
    with w <= 8: best[mask] = the best value giving teacher units
    0..popcount(mask)-1 the student units in mask, built a unit at a time."""
    best = np.zeros((len(gain), 1 << gain.shape[1]))
    for row, (masks, before, units) in enumerate(_subset_steps(gain.shape[1])):
        best[:, masks] = np.max(best[:, before] + gain[:, row, units], axis=2)
    return best[:, -1]


@functools.cache
def _subset_steps(width: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per number of units placed k = 1..width: the masks with k bits, and
    for each mask its k (mask without unit j, unit j)."""
    steps = []
    for k in range(1, width + 1):
        masks = [sum(1 << j for j in units) for units in itertools.combinations(range(width), k)]
        units = np.array([[j for j in range(width) if m >> j & 1] for m in masks], dtype=np.intp)
        steps.append((np.array(masks), np.array(masks)[:, None] ^ (1 << units), units))
    return steps


def _assign(gain: np.ndarray) -> np.ndarray:
    """perm with perm[i] = the student unit given to teacher unit i."""
    # Imported here: scipy takes longer to import than a default run takes to train.
    from scipy.optimize import linear_sum_assignment

    _, cols = linear_sum_assignment(gain, maximize=True)
    return cols


def _assign_value(gain: np.ndarray) -> np.ndarray:
    """The best linear assignment's value, as a batch of one."""
    return np.array([gain[np.arange(len(gain)), _assign(gain)].sum()])


def squared_distance(student: Layers, teacher: Layers) -> float:
    """Sum over layers of the squared (weight, bias) differences."""
    with np.errstate(over="ignore"):
        return float(sum(np.sum((w - tw) ** 2) + np.sum((b - tb) ** 2)
                         for (_, w, b), (_, tw, tb) in zip(student, teacher)))
