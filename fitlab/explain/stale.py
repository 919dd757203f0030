"""What the recorder finds in a graph at a backward call: the stale saved tensor behind the
in-place error and its writes since the save (Failure), writes a saved tensor will see without a
version bump (Silent), and saved tensors whose bytes changed unseen (Changed, check_contents).

A stale saved tensor is read without unpacking it where torch allows (compat.SAVED_DATA); elsewhere
its storage is the one whose recorded writes took a tensor from the saved version to the current
one after the save (the error's message gives both versions).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from fitlab.explain import compat
from fitlab.explain.decode import decode
from fitlab.explain.graph import hooked, saved_tensors, slots, stale_error, storage_key, walk
from fitlab.explain.records import CONTENTS, KEY, WALKED, Changed, Failure, Silent


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The tensor's values as bytes (NaN equal to itself), contiguous."""
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def copy_saved(node) -> None:
    """A copy of the bytes of each tensor the node saved (check_contents)."""
    copies = []
    for name, raw_attr, checked_attr in slots(node):
        # Batch norm saves its running stats, which a training backward does not read and the
        # next forward updates without a version bump.
        if name.startswith("running_") or hooked(node, raw_attr):
            continue
        for i, t in enumerate(saved_tensors(node, raw_attr, checked_attr)[0]):
            try:
                copies.append((name, raw_attr, checked_attr, i, t._version,
                               _bytes(t.detach().clone(memory_format=torch.contiguous_format))))
            except (RuntimeError, NotImplementedError, TypeError):  # inference, sparse, meta tensors
                continue
    if copies:
        node.metadata[CONTENTS] = copies


def later_writes(rec, key, after: int) -> list:
    """The recorded writes to storage `key` after sequence number `after`."""
    hist = rec.history.get(key)
    return [w for w in hist if w.seq > after] if hist else []


def check_contents(rec, nodes) -> None:
    """Saved tensors whose bytes changed since their copy while their version did not."""
    for node in nodes:
        copies = node.metadata.get(CONTENTS)
        entry = node.metadata.get(KEY)
        if not copies or entry is None:
            continue
        for name, raw_attr, checked_attr, i, version, before in copies:
            tensors = saved_tensors(node, raw_attr, checked_attr)[0]
            if i >= len(tensors) or tensors[i]._version != version:
                continue  # freed, or written by an op that bumped it: torch checks that itself
            t = tensors[i]
            try:
                if torch.equal(_bytes(t), before):
                    continue
            except RuntimeError:  # a fake tensor (Dynamo's compile made the node): no data to compare
                continue
            later = later_writes(rec, storage_key(t), entry[0])
            if any(w.inplace for w in later):
                continue  # an op torch ran through an alias: the silent-write check names it
            key = (node.name(), name, entry[1])
            if key not in rec.changed and len(rec.changed) < rec.max_silent:
                rec.changed[key] = Changed(node.name(), name, tuple(t.shape), entry[1] or (), tuple(later))


def find_silent(rec, nodes) -> None:
    """Writes after a save that bumped a counter while the saved tensor still unpacks (Silent)."""
    for node in nodes:
        entry = node.metadata.get(KEY)
        # A node whose call was not seen: when it saved is unknown, so no write is "after" it.
        if entry is None or entry[1] is None or entry[0] >= rec.last_inplace:
            continue
        for name, raw_attr, checked_attr in slots(node):
            tensors, hidden = saved_tensors(node, raw_attr, checked_attr)
            rec.unchecked += hidden
            for t in tensors:
                later = [w for w in later_writes(rec, storage_key(t), entry[0]) if w.inplace]
                # A write after the save that bumped a counter, yet the saved tensor
                # unpacks: the write went through an alias with its own counter (or a
                # saved-tensor hook, with which torch checks no version at all).
                if not later or (not hooked(node, raw_attr) and stale_error(node, checked_attr) is not None):
                    continue
                for w in later:
                    key = (w.op, tuple((c, n) for c, n in w.stack))
                    if key not in rec.silent and len(rec.silent) < rec.max_silent:
                        rec.silent[key] = Silent(w, node.name(), name, tuple(t.shape))


def _by_versions(rec, got, seq) -> int | None:
    """The storage whose recorded writes after `seq` took a tensor from got's saved version to its
    current one (the latest ending at it), a write of got's shape preferred, then of its size (a
    transposed weight is saved, the weight written): where torch gives no way to read a stale
    saved tensor."""
    size, best = math.prod(got.shape or ()), None
    for key, hist in rec.history.items():
        # A write the failing backward made itself (a gradient's buffer) is none of the program's.
        ws = [w for w in hist if w.inplace and (seq is None or w.seq > seq) and w.seq <= rec.backward_seq]
        if (not ws or ws[-1].version_before + 1 != got.version
                or not any(got.expected_version <= w.version_before for w in ws)):
            continue
        score = (any(w.shape == got.shape for w in ws), any(math.prod(w.shape) == size for w in ws), ws[-1].seq)
        if best is None or score > best[0]:
            best = (score, key)
    return None if best is None else best[1]


def _stale_slots(rec, roots) -> list:
    """(rank, node, slot name, storage key, facts of its error) of each stale saved tensor."""
    stale = []
    for node in walk(roots):
        for name, raw_attr, checked_attr in slots(node):
            if hooked(node, raw_attr):
                continue
            err = stale_error(node, checked_attr)
            got = None if err is None else decode(str(err))
            if got is None:
                continue
            if compat.SAVED_DATA:
                keys = [storage_key(t) for t in saved_tensors(node, raw_attr, checked_attr)[0]
                        if tuple(t.shape) == got.shape and t._version == got.version]
            else:
                entry = node.metadata.get(KEY)
                keys = [_by_versions(rec, got, None if entry is None or entry[1] is None else entry[0])]
            # Without SavedTensor.data, a stale tensor no recorded write explains is kept (its save is
            # still named): its storage is unknown.
            if keys and (keys[0] is not None or not compat.SAVED_DATA):
                stale.append((node._sequence_nr(), node, name, keys[0], got))
    return stale


def explain(rec, exc, facts, roots, failed_stack) -> Failure:
    """The Failure of a backward call that raised the in-place error (facts: its decoded message)."""
    stale = _stale_slots(rec, roots)
    # The engine runs the newest node first, so that is the one that raised.
    stale.sort(key=lambda s: -s[0])
    best = next((s for s in stale if (s[4].shape, s[4].version, s[4].expected_version)
                 == (facts.shape, facts.version, facts.expected_version)), None)
    if best is None:
        return Failure(exc, None, None, facts.expected_version, facts.version, facts.shape,
                       (), (), failed_stack, facts.gap or 0)
    # Other saved tensors of this graph already stale: backward would fail on each next, so a
    # script with two culprits gets both in one run (one per storage, the newest node's).
    # A tensor written by a line already named (an optimizer step writes every weight) adds nothing.
    main = _failure(rec, exc, *best[1:], roots, failed_stack, notes=True)
    storages, lines, also = {best[3]}, {w.stack for w in main.writes}, []
    for s in stale:
        if s[3] in storages:
            continue
        storages.add(s[3])
        other = _failure(rec, exc, *s[1:], roots, failed_stack, notes=False)
        if other.writes and other.writes[0].stack not in lines:
            lines.update(w.stack for w in other.writes)
            also.append(other)
    return dataclasses.replace(main, also=tuple(also))


def _failure(rec, exc, node, name, key, facts, roots, failed_stack, notes: bool) -> Failure:
    entry = node.metadata.get(KEY)
    seq, saved_stack = entry[:2] if entry is not None else (None, None)
    seen = saved_stack is not None
    formula = entry is not None and len(entry) > 2
    if notes and formula:
        rec.notes.append(
            f"{node.name()} was made by forward-mode AD's formula inside the call that saved it (torch's code, "
            "not a line of yours): no fix is named")
    before = entry is None or (not seen and rec.started_nr is not None
                               and node._sequence_nr() < rec.started_nr)
    if notes and before:
        rec.notes.append(
            f"{node.name()} was made before the recording started (the forward ran outside the recorded "
            "block): record the forward too, e.g. the whole cell or training step, to see where it saved "
            "the tensor and every write since")
    elif notes and not seen:
        rec.notes.append(
            f"{node.name()} was made inside a call fitlab.explain does not see (inside torch: a TorchScript "
            "function or module, forward-mode AD's formulas): the line that saved the tensor is not known")
    if not seen:  # which writes came after the save is then told by the versions alone
        seq, saved_stack = None, ()
    writes, complete = _chain(rec, key, seq, facts.expected_version, facts.version)
    carried = _new_forward_since(node.metadata.get(WALKED), roots)
    # Writes before an unseen save were maybe never recorded: the note says so, not a count.
    missing = 0 if complete or not seen else max((facts.gap or 0) - len(writes), 0)
    return Failure(exc, node.name(), name, facts.expected_version, facts.version, facts.shape,
                   saved_stack, tuple(writes), failed_stack, missing, carried, key, seen, formula=formula)


def _new_forward_since(walked, roots) -> bool:
    """Whether the failing graph holds a new forward built after an earlier backward walked
    the stale node: a node made since that uses a parameter (a leaf that requires grad). A
    state carried from an earlier batch feeds such a forward; a new loss built on an old output
    (a GAN's one `score = D(G(z))` used for both losses, a loss recomputed from an old
    prediction) adds none."""
    if walked is None:
        return False
    for n in walk(roots):
        entry = n.metadata.get(KEY)
        if entry is not None and entry[0] > walked and any(
                hasattr(m, "variable") for m, _ in n.next_functions if m is not None):
            return True
    return False


def _chain(rec, key, seq, saved_version, version) -> tuple:
    """The recorded writes that took the saved tensor from its saved version to now, and
    whether the history is complete (it never dropped a write of this storage)."""
    hist = rec.history.get(key)
    complete = hist is not None and len(hist) < hist.maxlen
    hist = hist or ()
    if seq is not None:
        hist = [w for w in hist if w.seq > seq]
    return [w for w in hist if w.inplace and saved_version <= w.version_before < version], complete
