"""The version ledger: each parameter's version counter at the moments that
matter for the in-place error.

An in-place op on a tensor (the student's kaiming_normal_ and zeros_ here)
bumps its `_version`; a write through `.data`, a fused optimiser step or a
`_foreach_*_` op under a dispatch mode does not. A saved tensor remembers the
version it was saved at; backward() refuses it if the counter moved on.
"""

from __future__ import annotations

import pandas as pd
import torch

from fitlab.failure.graph import LabelGraph

# The moments the ledger reads each counter at, as its columns (in words: fitlab.figures.tables).
MOMENTS = ("teacher_forward", "student_reinit", "failing_backward")


def named_parameters(named_layers) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) of each weight and bias, named as the parameter tables
    name them, e.g. "last.weight"."""
    return [(f"{name}.{kind}", getattr(layer, kind))
            for name, layer in named_layers for kind in ("weight", "bias")]


def parameter_versions(named: list[tuple[str, torch.Tensor]]) -> dict[str, int]:
    """Each parameter's version counter now."""
    return {name: tensor._version for name, tensor in named}


def version_ledger(named: list[tuple[str, torch.Tensor]], moments: list[dict[str, int]],
                   graph: LabelGraph) -> pd.DataFrame:
    """One row per parameter: its shape, what the labels' graph saved of it
    (`saved`: a (name, shape, version saved at) for each save, one per use),
    its version at each of MOMENTS, and whether a saved copy is stale.

    A parameter the graph never saved (the biases, and the first layer's
    weight, since X needs no gradient) cannot be stale, whatever its version.
    """
    rows = []
    for name, tensor in named:
        saved = [s for s in graph.saved if s.parameter == name]
        row = {"parameter": name, "shape": str(list(tensor.shape)),
               "saved": tuple((s.name, tuple(s.shape), s.saved_version) for s in saved)}
        row.update({moment: versions[name] for moment, versions in zip(MOMENTS, moments)})
        row["stale"] = any(s.stale for s in saved)
        rows.append(row)
    return pd.DataFrame(rows)

