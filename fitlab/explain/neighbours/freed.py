"""A backward through a graph an earlier backward freed: which forward built it, which backward
freed it, where the new graph joined the old one, and why the two met.

The recorder tells each backward that did not retain its graph to `Backwards.done`, which keeps its
root nodes (the last few backwards' only: the nodes, not the tensors they saved, which that backward
freed) and the autograd sequence number after it, so that a later node is told from an earlier one.
When a backward raises "Trying to backward through the graph a second time", `explain` looks at the
failing graph: the newest node whose saved tensors are gone (the engine reaches it first) is where
the two graphs meet; the freeing backward is the latest kept one that walked it. Why they met:
- a new node uses the freeing backward's root: a loss accumulated across iterations;
- the same backward line in both (a loop), and the freed node's own line ran again since: a state
  carried across batches;
- the same line otherwise: a tensor computed once, before the loop;
- two different backward lines: one forward shared by two losses (a GAN's generator output).
For that last cause it also keeps where the first backward's graph entered the shared part (the
first loss's use of the shared output, `D(fake)` in D's loss), where its fix, a detach, goes.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import NamedTuple

from fitlab.explain import modes
from fitlab.explain import stack as stacks
from fitlab.explain.graph import hooked, slots, walk
from fitlab.explain.neighbours.messages import FREED, neighbour

# The recorder's node tag (recorder.KEY): (op sequence number, stack of the forward call).
TAG = "fitlab.explain"
# Backwards kept: a GAN's two and a loop's last with room to spare; each holds its graph's nodes.
KEEP = 4
# Where retain_graph sits among each backward function's positional arguments.
_RETAIN_AT = {"backward": 2, "grad": 3}


class Walked(NamedTuple):
    """A backward that freed its graph: its root nodes, its stack, the next autograd number."""

    roots: tuple
    stack: tuple
    next_nr: int | None


@dataclass(frozen=True)
class Freed:
    """What the failing backward met. cause: a key of causes.py (None: no freed node, or no kept
    backward that freed it, was found);
    node: the freed node's name; built: the stack of the forward that made it; joined: that of the
    new node that used the old graph; first: the freeing backward's stack; failed: the failing one's;
    entered: for a shared forward, the stacks of the first backward's nodes that use the shared part."""

    exc: BaseException
    cause: str | None
    node: str | None
    built: tuple
    joined: tuple
    first: tuple
    failed: tuple
    entered: tuple = ()


def retains(func, args, kwargs) -> bool:
    """Whether a backward call keeps its graph (retain_graph, by default create_graph)."""
    at = _RETAIN_AT["grad" if func.__name__ == "grad" else "backward"]
    retain = args[at] if len(args) > at else kwargs.get("retain_graph")
    return bool(modes.creates_graph(func, args, kwargs) if retain is None else retain)


class Backwards:
    """The last KEEP backwards that freed their graphs, oldest first."""

    def __init__(self) -> None:
        self.walked: collections.deque = collections.deque(maxlen=KEEP)

    def done(self, func, args, kwargs, roots, stack) -> None:
        """A backward call returned: kept if it freed its graph."""
        if retains(func, args, kwargs):
            return
        nodes = tuple(n for n in (modes.grad_fn(r) for r in roots) if n is not None)
        if nodes:
            self.walked.append(Walked(nodes, stack, modes.sequence_nr()))


def retaining(func, args, kwargs) -> tuple:
    """(args, kwargs) of a backward call made to keep its graph (retain_graph=True)."""
    at = _RETAIN_AT["grad" if func.__name__ == "grad" else "backward"]
    if len(args) > at:
        return (*args[:at], True, *args[at + 1:]), kwargs
    return args, {**kwargs, "retain_graph": True}


def is_freed(exc: BaseException) -> bool:
    """Whether exc is autograd's "backward through the graph a second time"."""
    found = isinstance(exc, RuntimeError) and neighbour(str(exc))
    return bool(found) and found.kind == FREED


def _was_freed(node) -> bool:
    for _, raw_attr, checked_attr in slots(node):
        if hooked(node, raw_attr):  # unpacking would run the hook (checkpoint's recomputes)
            continue
        try:
            getattr(node, checked_attr)
        except RuntimeError as exc:
            if is_freed(exc):
                return True
    return False


def _reach(nodes) -> set:
    seen, todo = set(), list(nodes)
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(n for n, _ in node.next_functions if n is not None)
    return seen


def _stack(node) -> tuple:
    tag = node.metadata.get(TAG)
    return () if tag is None or tag[1] is None else tag[1]


def _line(stack: tuple):
    """(file, line) of the innermost user frame, or None."""
    frames = stacks.user_frames(stack)
    return (frames[-1].file, frames[-1].line) if frames else None


def explain(backwards: Backwards, exc: BaseException, roots: list, failed: tuple) -> Freed:
    """Why the backward with these roots found its graph freed."""
    nodes = walk(roots)
    # The failing backward frees what it ran before it stopped: a node made after the last kept
    # backward was freed by this one.
    last = backwards.walked[-1].next_nr if backwards.walked else None
    freed = [n for n in nodes if (last is None or n._sequence_nr() < last) and _was_freed(n)]
    if not freed:
        return Freed(exc, None, None, (), (), (), failed)
    culprit = max(freed, key=lambda n: n._sequence_nr())
    built = _stack(culprit)
    walked = next((w for w in reversed(backwards.walked) if culprit in _reach(w.roots)), None)
    if walked is None or walked.next_nr is None:  # which backward freed it is unknown: no cause guessed
        return Freed(exc, None, culprit.name(), built, (), (), failed)
    # AccumulateGrad nodes (a leaf's, holding `variable`) are numbered past every forward's.
    new = [n for n in nodes if n._sequence_nr() >= walked.next_nr and not hasattr(n, "variable")]
    joins = [(n, m) for n in new for m, _ in n.next_functions
             if m is not None and m._sequence_nr() < walked.next_nr]
    joined = _stack(joins[0][0]) if joins else ()
    if any(m in walked.roots for _, m in joins):
        cause = "freed_accumulated_loss"
        joined = next(_stack(n) for n, m in joins if m in walked.roots)
    elif _line(walked.stack) != _line(failed):
        cause = "freed_shared_forward"
    elif _line(built) is not None and any(_line(_stack(n)) == _line(built) for n in new):
        cause = "freed_carried_state"
    else:
        cause = "freed_computed_once"
    entered = _entered(walked.roots, nodes) if cause == "freed_shared_forward" else ()
    return Freed(exc, cause, culprit.name(), built, joined, walked.stack, failed, entered)


def _entered(first_roots, nodes: list) -> tuple:
    """The stacks of the first graph's nodes that use the part both graphs share (the first loss's
    use of the shared output), oldest first, each once."""
    first = _reach(first_roots)
    shared = {n for n in nodes if n in first and not hasattr(n, "variable")}  # leaves' nodes aside
    entries = [n for n in first if n not in shared and not hasattr(n, "variable")
               and any(m in shared for m, _ in n.next_functions if m is not None)]
    return tuple(dict.fromkeys(_stack(n) for n in sorted(entries, key=lambda n: n._sequence_nr())))
