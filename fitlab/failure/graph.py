"""The labels' autograd graph as plain values, and as a DOT picture.

The graph is read without touching its version checks: a saved tensor is
read through `node._raw_saved_<name>.data`, because `node._saved_<name>`
unpacks it and raises the very error being explained. Saved-tensor hooks are
not used either: with hooks installed torch skips the version check, and
backward reads the stale tensors unnoticed (what that does to the blog's loop
depends on the settings: fitlab.failure.fixes.unchecked_loop runs it).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from fitlab.explain.decode import decode

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
    saved_grad_fn  its own grad_fn's type when saved (the view `weight.t()`
                   has TBackward0), or None
    grad_fn        its grad_fn's type now: after an in-place write to a view's
                   base, autograd regenerates the view's history as
                   AsStridedBackward0
    """

    node: str
    name: str
    shape: tuple[int, ...]
    parameter: str | None
    saved_version: int
    version: int
    saved_grad_fn: str | None
    grad_fn: str | None

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


def _grad_fn_name(tensor: torch.Tensor) -> str | None:
    return None if tensor.grad_fn is None else type(tensor.grad_fn).__name__


def saved_versions(output: torch.Tensor) -> dict[tuple[int, str], tuple[int, str | None]]:
    """The version and grad_fn type of each saved tensor now, keyed by (node
    index, name). Taken right after the forward pass, these are the versions
    torch expects, and the views' histories as they were made."""
    return {(i, name): (tensor._version, _grad_fn_name(tensor))
            for i, fn in enumerate(grad_fns(output))
            for name, tensor in _saved_tensors(fn)}


def label_graph(output: torch.Tensor, named_parameters: list[tuple[str, torch.Tensor]],
                versions_at_forward: dict[tuple[int, str], tuple[int, str | None]]) -> LabelGraph:
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
            saved_version, saved_grad_fn = versions_at_forward[(i, name)]
            saved.append(SavedTensor(
                node=node, name=name, shape=tuple(tensor.shape),
                parameter=by_storage.get(tensor.untyped_storage().data_ptr()),
                saved_version=saved_version, version=tensor._version,
                saved_grad_fn=saved_grad_fn, grad_fn=_grad_fn_name(tensor)))
    return LabelGraph(tuple(nodes), tuple(leaves), tuple(edges), tuple(saved))


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"').replace("\n", "\\n") + '"'


def _leaf_label(name: str, shape: tuple[int, ...]) -> str:
    return f"{name}\n{_shape(shape)}"


def _shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def graph_dot(graph: LabelGraph) -> str:
    """DOT text of the graph, one statement per line.

    grad_fn nodes are boxes; the activations a node saved (tensors that are
    no parameter) are listed in its box in grey. Parameter leaves are green
    ellipses named by parameter: a shared weight is one leaf with an edge per
    use. A saved parameter tensor is a note beside its node, on a dashed
    edge. Every saved tensor shows shape, current version and the version it
    was saved at; stale notes are red. The chain of nodes that carries the
    activations is kept straight so a deep net stays readable.
    """
    leaf_ids = {node for node, _, _ in graph.leaves}
    spine = {a for a, b in graph.edges if b not in leaf_ids}
    lines = ["digraph labels {",
             "  rankdir=TB; nodesep=0.2; ranksep=0.25;",
             '  node [fontname="Helvetica", fontsize=10, margin="0.08,0.03", height=0.3];',
             '  edge [arrowsize=0.6];']
    activations: dict[str, list[str]] = {}
    for t in graph.saved:
        if t.parameter is None:
            activations.setdefault(t.node, []).append(f"{t.name} {_versions(t)}")
    for node, kind in graph.nodes:
        label = "\n".join([kind, *activations.get(node, [])])
        group = ', group="spine"' if node in spine else ""
        lines.append(f'  {_quote(node)} [label={_quote(label)}, shape=box, style="rounded"{group}];')
    for node, name, shape in graph.leaves:
        lines.append(f'  {_quote(node)} [label={_quote(_leaf_label(name, shape))}, shape=ellipse, '
                     f'style=filled, fillcolor="#d9f2d9"];')
    for node_from, node_to in graph.edges:
        weight = " [weight=8]" if node_from in spine and node_to in spine else ""
        lines.append(f"  {_quote(node_from)} -> {_quote(node_to)}{weight};")
    for t in graph.saved:
        if t.parameter is None:
            continue
        sid = f"{t.node}:{t.name}"
        colour = STALE_COLOUR if t.stale else "#555555"
        label = "\n".join([f"{t.name} = {t.parameter}", _versions(t), *_history(t)])
        lines.append(f"  {_quote(sid)} [label={_quote(label)}, "
                     f'shape=note, color="{colour}", fontcolor="{colour}", penwidth={2 if t.stale else 1}];')
        lines.append(f'  {_quote(t.node)} -> {_quote(sid)} [style=dashed, arrowhead=none, color="{colour}"];')
        lines.append(f"  {{rank=same; {_quote(t.node)}; {_quote(sid)};}}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _history(t: SavedTensor) -> list[str]:
    """The view's grad_fn when saved and now, if the in-place write changed it."""
    return [f"{t.saved_grad_fn} → {t.grad_fn}"] if t.grad_fn != t.saved_grad_fn else []


def _versions(t: SavedTensor) -> str:
    return f"{_shape(t.shape)}  now v{t.version}, saved v{t.saved_version}"


def named_in_error(graph: LabelGraph, message: str) -> SavedTensor | None:
    """The stale saved tensor torch's message describes: same shape, same
    current and expected versions (the first such in the walk), or None."""
    facts = decode(message)
    if facts is None or None in (facts.shape, facts.version, facts.expected_version):
        return None
    wanted = (tuple(facts.shape), facts.version, facts.expected_version)
    return next((s for s in graph.stale if (s.shape, s.version, s.saved_version) == wanted), None)
