"""Which of autograd's neighbouring errors a message (or a pasted traceback) holds, and its likely
causes (keys of causes.py), most likely first. Pure text: the page's decoder reads it too."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fitlab.explain.decode import MAX_CHARS

FREED, LEAF, LEAF_VIEW, MULTI_VIEW, FUNCTION_VIEW = (
    "freed_graph", "leaf_inplace", "leaf_view_inplace", "multi_view_inplace", "function_view_inplace")

# Literal text of each message, as torch 1.x to 2.13 word it; the view's producer is read from
# "Output 0 of UnbindBackward0 is a view" (torch 2.13 drops the "Backward0").
# torch 0.x said "through the graph second time, but the buffers have already been freed".
_FREED = re.compile(r"Trying to backward through the graph (?:a )?second time")
_LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation"
_LEAF = "a leaf Variable that requires grad is being used in an in-place operation"
_VIEW = re.compile(r"Output (?P<index>\d{1,6}) of (?P<producer>[A-Za-z_]\w{0,100}) is a view and "
                   r"(?:is being modified inplace|its base or another view of its base has been modified "
                   r"inplace)\. This view (?P<why>is (?:the|an) output of a function that returns multiple "
                   r"views|was created inside a custom Function)")

# The label of the line a neighbouring error's fix is for, in the report and in --fix's verdicts: the
# write, or for a freed graph the forward that built it (the first backward freed it).
WRITTEN_AT, BUILT_AT = "written at", "built at"

LIKELY = {
    FREED: ("freed_shared_forward", "freed_carried_state", "freed_computed_once", "freed_accumulated_loss"),
    LEAF: ("leaf_update", "leaf_accumulate"),
    LEAF_VIEW: ("leaf_view_write",),
    MULTI_VIEW: ("multi_view_write",),
    FUNCTION_VIEW: ("function_view_write", "hook_view_write"),
}


@dataclass(frozen=True)
class Neighbour:
    """One neighbouring error in a text: kind (FREED, LEAF...), the view's producer as printed
    ("UnbindBackward0", "Alias"; None for the others) and the likely causes, most likely first."""

    kind: str
    producer: str | None
    causes: tuple


def neighbour(text: str) -> Neighbour | None:
    """The neighbouring autograd error in `text` (a message or a whole traceback), or None.
    Never raises."""
    if not isinstance(text, str):
        return None
    text = text[:MAX_CHARS]
    view = _VIEW.search(text)
    if view is not None:
        kind = MULTI_VIEW if "multiple views" in view["why"] else FUNCTION_VIEW
        return Neighbour(kind, view["producer"], LIKELY[kind])
    kind = (FREED if _FREED.search(text) else LEAF_VIEW if _LEAF_VIEW in text else LEAF if _LEAF in text
            else None)
    if kind is None:
        return None
    return Neighbour(kind, None, LIKELY[kind])


def raised(exc: BaseException | None) -> bool:
    """Whether `exc` is one of the neighbouring errors."""
    return isinstance(exc, RuntimeError) and neighbour(str(exc)) is not None
