"""The labels' autograd graph as plain values, and as a DOT picture.

The graph is read without touching its version checks: a saved tensor is
read through `node._raw_saved_<name>.data`, because `node._saved_<name>`
unpacks it and raises the very error being explained. Saved-tensor hooks are
not used either: with hooks installed torch skips the version check, and the
blog's script would silently train with wrong gradients.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

_RAW = "_raw_saved_"
STALE_COLOUR = "#d62728"


@dataclass(frozen=True)
class SavedTensor:
    """A tensor a grad_fn node saved for backward.

    node           id of the node that saved it
    name           the node's name for it, e.g. "mat2"
    shape          its shape
    parameter      the parameter whose storage it shares, or None (an activation)
    saved_version  its version when the forward pass saved it
    version        its version now
    """

    node: str
    name: str
    shape: tuple[int, ...]
    parameter: str | None
    saved_version: int
    version: int

    @property
    def stale(self) -> bool:
        """Written in place since it was saved: backward would refuse it."""
        return self.version != self.saved_version


@dataclass(frozen=True)
class LabelGraph:
    """The graph behind a tensor: grad_fn nodes (id, type name), parameter
    leaves (id, name, shape), edges (from, to) in the direction backward
    walks, and the saved tensors."""

    nodes: tuple[tuple[str, str], ...]
    leaves: tuple[tuple[str, str, tuple[int, ...]], ...]
    edges: tuple[tuple[str, str], ...]
    saved: tuple[SavedTensor, ...]

    @property
    def stale(self) -> tuple[SavedTensor, ...]:
        """The saved tensors whose version moved on."""
        return tuple(s for s in self.saved if s.stale)


def grad_fns(output: torch.Tensor) -> list:
    """Every grad_fn node behind `output`, in a fixed depth-first order (so
    two walks of one graph number its nodes alike)."""
    order, seen, stack = [], set(), [output.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        order.append(fn)
        stack.extend(child for child, _ in reversed(fn.next_functions))
    return order


def _saved_tensors(fn) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) of what `fn` saved, read without the version check.
    Entries that were not saved (None) are skipped."""
    found = []
    for attr in dir(fn):
        if attr.startswith(_RAW):
            raw = getattr(fn, attr)
            tensor = getattr(raw, "data", None)
            if isinstance(tensor, torch.Tensor):
                found.append((attr[len(_RAW):], tensor))
    return found


def saved_versions(output: torch.Tensor) -> dict[tuple[int, str], int]:
    """The version of each saved tensor now, keyed by (node index, name).
    Taken right after the forward pass, these are the versions torch expects."""
    return {(i, name): tensor._version
            for i, fn in enumerate(grad_fns(output))
            for name, tensor in _saved_tensors(fn)}


def label_graph(output: torch.Tensor, named_parameters: list[tuple[str, torch.Tensor]],
                versions_at_forward: dict[tuple[int, str], int]) -> LabelGraph:
    """The graph behind `output` as it is now.

    `named_parameters` names the leaves (one leaf per tensor, however often it
    is used) and the saved tensors that share a parameter's storage, such as
    the `weight.t()` view F.linear saves. `versions_at_forward` is
    saved_versions() taken right after the forward pass.
    """
    by_id = {id(p): name for name, p in named_parameters}
    by_storage = {p.untyped_storage().data_ptr(): name for name, p in named_parameters}
    nodes, leaves, edges, saved = [], [], [], []
    fns = grad_fns(output)
    ids = {fn: f"n{i}" for i, fn in enumerate(fns)}
    for i, fn in enumerate(fns):
        node = ids[fn]
        variable = getattr(fn, "variable", None)
        if variable is not None:
            leaves.append((node, by_id.get(id(variable), "input"), tuple(variable.shape)))
        else:
            nodes.append((node, type(fn).__name__))
        edges.extend((node, ids[child]) for child, _ in fn.next_functions if child is not None)
        for name, tensor in _saved_tensors(fn):
            saved.append(SavedTensor(
                node=node, name=name, shape=tuple(tensor.shape),
                parameter=by_storage.get(tensor.untyped_storage().data_ptr()),
                saved_version=versions_at_forward[(i, name)], version=tensor._version))
    return LabelGraph(tuple(nodes), tuple(leaves), tuple(edges), tuple(saved))


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"').replace("\n", "\\n") + '"'


def _leaf_label(name: str, shape: tuple[int, ...]) -> str:
    return f"{name}\n{_shape(shape)}"


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def graph_dot(graph: LabelGraph) -> str:
    """DOT text of the graph, one statement per line: grad_fn nodes as boxes,
    parameter leaves as green ellipses named by parameter (a shared weight is
    one leaf with an edge per use), saved tensors as notes hung on their node
    by a dashed edge, showing shape, current and saved version; stale ones red.
    Activations (saved tensors that are no parameter) are drawn small and grey.
    """
    lines = ["digraph labels {",
             "  rankdir=TB; nodesep=0.15; ranksep=0.3;",
             '  node [fontname="Helvetica", fontsize=10, margin="0.06,0.03", height=0.3];',
             '  edge [arrowsize=0.6];']
    for node, kind in graph.nodes:
        lines.append(f'  {_quote(node)} [label={_quote(kind)}, shape=box, style="rounded"];')
    for node, name, shape in graph.leaves:
        lines.append(f'  {_quote(node)} [label={_quote(_leaf_label(name, shape))}, shape=ellipse, '
                     f'style=filled, fillcolor="#d9f2d9"];')
    for node_from, node_to in graph.edges:
        lines.append(f"  {_quote(node_from)} -> {_quote(node_to)};")
    for s in graph.saved:
        sid = f"{s.node}:{s.name}"
        what = f"{s.name} = {s.parameter}" if s.parameter else s.name
        label = f"{what}\n{_shape(s.shape)}  now v{s.version}, saved v{s.saved_version}"
        if s.stale:
            style = f'color="{STALE_COLOUR}", fontcolor="{STALE_COLOUR}", penwidth=2'
        elif s.parameter:
            style = 'color="#555555"'
        else:
            style = 'color="#aaaaaa", fontcolor="#888888", fontsize=8'
        lines.append(f"  {_quote(sid)} [label={_quote(label)}, shape=note, {style}];")
        lines.append(f'  {_quote(s.node)} -> {_quote(sid)} [style=dashed, arrowhead=none, '
                     f'color="{STALE_COLOUR if s.stale else "#aaaaaa"}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


_NAMED = re.compile(r"\[torch\.\w+ \[([\d, ]*)\]\].*is at version (\d+); expected version (\d+)")


def named_in_error(graph: LabelGraph, message: str) -> SavedTensor | None:
    """The stale saved tensor torch's message describes: same shape, same
    current and expected versions (the first such in the walk), or None."""
    found = _NAMED.search(message)
    if found is None:
        return None
    shape = tuple(int(d) for d in found.group(1).split(",") if d.strip())
    now, expected = int(found.group(2)), int(found.group(3))
    return next((s for s in graph.stale
                 if (s.shape, s.version, s.saved_version) == (shape, now, expected)), None)
