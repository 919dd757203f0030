"""What the recorder keeps: each write (with its stack), and what it finds at a backward call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

# Node metadata: (op sequence number, stack of the forward call; None when the call was not seen).
KEY = "fitlab.explain"
# Node metadata: the sequence number when a backward call first walked the node.
WALKED = "fitlab.explain.walked"
# Node metadata (check_contents): a copy of each saved tensor's bytes, taken when the node was tagged.
CONTENTS = "fitlab.explain.contents"
# Node metadata where torch cannot tell a hooked saved tensor (compat.SAVED_DATA false): True when
# saved-tensor hooks were on as the node was made (unpacking its tensors would run them).
HOOKED = "fitlab.explain.hooked"


class Write(NamedTuple):  # a tuple: three times cheaper to make than a frozen dataclass, per write
    """One in-place write to a storage, as recorded (stack not yet resolved).

    target: "parameter" (a leaf that requires grad), "leaf" (an input, a buffer), "view"
    (of any tensor: `h[:, 0] = 0` writes one) or "activation" (computed by autograd). modules: weak references to
    the modules whose forward was running, innermost first (in-place writes only).
    """

    seq: int
    op: str
    version_before: int
    # An in-place or out= op, as opposed to one that updates a buffer on the side
    # without a version bump (batch norm's running stats), which backward ignores.
    inplace: bool
    shape: tuple
    stack: tuple
    target: str
    modules: tuple


@dataclass(frozen=True, slots=True)
class Failure:
    """What the recorder learnt when a backward call raised the in-place error.

    carried: the stale node had been walked by an earlier backward and the failing
    backward's roots were made after that (a state carried from an earlier batch).
    """

    exc: BaseException
    node: str | None
    saved_as: str | None
    saved_version: int | None
    version: int | None
    shape: tuple | None
    saved_stack: tuple
    writes: tuple
    failed_stack: tuple
    writes_missing: int
    carried: bool = False
    storage: int | None = None
    # False when the node that saved was made by a call the mode did not see (its line unknown).
    saved_seen: bool = True
    # True when forward-mode AD's formula made the node inside the saving call (no fix of the user's).
    formula: bool = False
    # The graph's other stale saved tensors (one per storage), each as a Failure of its own.
    also: tuple = ()


@dataclass(frozen=True, slots=True)
class Silent:
    """A write that a graph's saved tensor will see without a version bump."""

    write: Write
    node: str
    saved_as: str
    shape: tuple


@dataclass(frozen=True, slots=True)
class Changed:
    """A saved tensor whose contents changed between its save and a backward through it, its
    version unchanged (check_contents): a write no op torch ran made, or none that bumped.
    writes: the recorded writes to its storage since the save that bump no version (none for a
    write through numpy's memory, ctypes, another process)."""

    node: str
    saved_as: str
    shape: tuple
    saved_stack: tuple
    writes: tuple
