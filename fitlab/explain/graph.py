"""Reading an autograd graph: its nodes, the tensors each saved, and which went stale."""

from __future__ import annotations

import torch

from fitlab.explain import compat
from fitlab.explain.decode import decode
from fitlab.explain.records import HOOKED


def storage_key(t: torch.Tensor):
    """The storage's address: shared by a tensor, its views and its `.data`; None if it has none."""
    try:
        storage = t.untyped_storage()
        return storage.data_ptr() if storage.nbytes() else None
    except (RuntimeError, NotImplementedError):
        return None


def walk(roots) -> list:
    """Every autograd node reachable from the root tensors."""
    seen = set()
    todo = [r.grad_fn for r in roots if r.grad_fn is not None]
    out = []
    pop, push, add = todo.pop, todo.append, seen.add
    while todo:
        node = pop()
        if node in seen:
            continue
        add(node)
        out.append(node)
        for n, _ in node.next_functions:  # a loop, not a generator: every backward walks its graph
            if n is not None and n not in seen:
                push(n)
    return out


_SLOTS: dict = {}


def slots(node) -> tuple:
    """(name, raw attribute, checked attribute) of each tensor slot a node saved; cached per type."""
    cached = _SLOTS.get(type(node))
    if cached is None:
        attrs = set(dir(type(node)))
        names = [a[len("_raw_saved_"):] for a in attrs if a.startswith("_raw_saved_")]
        cached = tuple(
            # Custom autograd.Function nodes unpack with the version check as `saved_tensors`.
            (n, "_raw_saved_" + n, "_saved_" + n if "_saved_" + n in attrs else "saved_tensors")
            for n in sorted(names))
        _SLOTS[type(node)] = cached
    return cached


def saved_tensors(node, raw_attr: str, checked_attr: str) -> tuple:
    """(tensors, hidden): the tensors in a saved slot, read without the version check where torch
    allows (compat.SAVED_DATA; elsewhere unpacked: none if stale), none once freed; and how many a
    saved-tensor hook packed into something else (checkpoint's holders)."""
    if not compat.SAVED_DATA:
        if hooked(node, raw_attr):
            return [], 1
        try:
            got = getattr(node, checked_attr)
        except RuntimeError:
            return [], 0
        return [t for t in (got if isinstance(got, (tuple, list)) else (got,)) if isinstance(t, torch.Tensor)], 0
    try:
        raw = getattr(node, raw_attr)
        raws = raw if isinstance(raw, (tuple, list)) else (raw,)
        packed = [compat.saved_data(r) for r in raws if r is not None]
    except RuntimeError:
        return [], 0
    tensors = [t for t in packed if isinstance(t, torch.Tensor)]
    return tensors, sum(1 for t in packed if t is not None and not isinstance(t, torch.Tensor))


def hooked(node, raw_attr: str) -> bool:
    """Whether a saved-tensor hook packed this slot (unpacking it would run the hook); where torch
    does not say, whether hooks were on when the recorder tagged the node (records.HOOKED)."""
    if not compat.SAVED_DATA:
        return bool(node.metadata.get(HOOKED))
    try:
        raw = getattr(node, raw_attr)
        raws = raw if isinstance(raw, (tuple, list)) else (raw,)
        return any(r is not None and compat.unpack_hook(r) is not None for r in raws)
    except (RuntimeError, AttributeError):
        return False
def stale_error(node, checked_attr: str) -> RuntimeError | None:
    """The in-place error torch raises on unpacking this slot, or None if it unpacks."""
    try:
        getattr(node, checked_attr)
    except RuntimeError as exc:
        return exc if decode(str(exc)) is not None else None
    return None
