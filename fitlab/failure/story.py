"""The lesson's opening picture as data: the teacher's forward pass as the
labels' graph recorded it, one row per operation in forward order, each with
the parameter it saved for backward and that tensor's version when saved and
now, and where the student's backward stops.

Everything comes from a replay's LabelGraph (fitlab.failure.graph): change
the width and the saved shapes change with it; change the repeats and the
chain grows.
"""

from __future__ import annotations

import pandas as pd

from fitlab.failure.graph import LabelGraph, SavedTensor

# The grad_fn of a forward operation, in the words of a layer of the net.
OPERATIONS = {"AddmmBackward0": "Linear", "MmBackward0": "Linear", "ReluBackward0": "ReLU",
              "ViewBackward0": "reshape → labels", "ReshapeAliasBackward0": "reshape → labels"}


def _leaf_names(graph: LabelGraph, node: str) -> list[str]:
    """The parameters `node` reaches within two steps that are not on the
    chain (its weight through TBackward0, its bias directly)."""
    leaves = {n: name for n, name, _ in graph.leaves}
    kinds = dict(graph.nodes)
    found = []
    for a, b in graph.edges:
        if a != node:
            continue
        if b in leaves:
            found.append(leaves[b])
        elif kinds.get(b) == "TBackward0":
            found.extend(leaves[c] for x, c in graph.edges if x == b and c in leaves)
    return found


def forward_chain(graph: LabelGraph) -> list[str]:
    """The chain of grad_fn nodes from the first layer to the labels, in
    forward order (backward walks it the other way, from the last)."""
    kinds = dict(graph.nodes)
    children = {}
    for a, b in graph.edges:
        if kinds.get(b) not in (None, "TBackward0"):
            children.setdefault(a, b)
    chain, node = [], graph.nodes[0][0]   # the walk starts at the labels' own grad_fn
    while node is not None:
        chain.append(node)
        node = children.get(node)
    return chain[::-1]


def story_rows(graph: LabelGraph, culprit: SavedTensor | None) -> pd.DataFrame:
    """One row per operation of the teacher's forward pass, first to last:

    step        its place in the forward pass (0 the first)
    operation   "Linear first", "ReLU", "reshape"...: the layer it belongs to
    grad_fn     the node autograd recorded, e.g. "AddmmBackward0"
    saved       the parameter tensor it saved, as the code names it
                ("last.weight.t()"), or "" if it saved none
    shape       that tensor's shape, e.g. "[5, 1]", or ""
    saved_version, version   its version counter when saved, and now (-1: none)
    stale       its version moved on
    culprit     it is the tensor torch's message names
    reached     the student's backward gets this far: every operation from
                the labels back to the culprit's (all of them if none)
    """
    saved_by = {}
    for s in graph.saved:
        if s.parameter is not None:
            saved_by.setdefault(s.node, s)
    kinds = dict(graph.nodes)
    chain = forward_chain(graph)
    stop = chain.index(culprit.node) if culprit is not None and culprit.node in chain else 0
    rows = []
    for step, node in enumerate(chain):
        kind = kinds[node]
        layers = sorted({name.split(".")[0] for name in _leaf_names(graph, node)})
        operation = " ".join([OPERATIONS.get(kind, kind.removesuffix("Backward0")), *layers])
        s = saved_by.get(node)
        rows.append({
            "step": step, "operation": operation, "grad_fn": kind,
            "saved": f"{s.parameter}.t()" if s is not None else "",
            "shape": "[" + ", ".join(map(str, s.shape)) + "]" if s is not None else "",
            "saved_version": s.saved_version if s is not None else -1,
            "version": s.version if s is not None else -1,
            "stale": bool(s is not None and s.stale),
            "culprit": bool(s is not None and culprit is not None and s == culprit),
            "reached": step >= stop,
        })
    return pd.DataFrame(rows)
