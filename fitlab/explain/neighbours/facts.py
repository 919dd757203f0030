"""The report of a neighbouring error: the lines that matter, labelled, and the fix for the cause
(causes.py's advice, filled with what was recorded), as the in-place error's report gives them."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from fitlab.explain import advice
from fitlab.explain import stack as stacks
from fitlab.explain.advice import Fix
from fitlab.explain.causes import CAUSES, FREED_GRAPH
from fitlab.explain.codemods import Site
from fitlab.explain.decode import normalise_producer
from fitlab.explain.neighbours import freed as fr
from fitlab.explain.neighbours import written as wr
from fitlab.explain.neighbours.messages import BUILT_AT, FREED, WRITTEN_AT, neighbour
from fitlab.explain.report import Report, _fix_lines, _lines

# Each error's first line after Python's traceback.
HEADINGS = {
    FREED: "Two backward() calls walked one graph; the first freed the tensors it saved:",
    "leaf_inplace": "An in-place write to a leaf that requires grad, with grad mode on:",
    "leaf_view_inplace": "An in-place write into a view of a leaf that requires grad, with grad mode on:",
    "multi_view_inplace": "An in-place write into one of several views one call returned:",
    "function_view_inplace": "An in-place write into a view a custom autograd.Function (or a backward hook) "
                             "returned:",
}


@dataclass(frozen=True)
class Place:
    """One labelled line of the report: label, the user's frames (outermost first), a note after it."""

    label: str
    frames: tuple
    note: str = ""

    def to_dict(self) -> dict:
        """The JSON object of one entry of "places"."""
        return {"label": self.label, "frames": [f.to_dict() for f in self.frames], "note": self.note}


@dataclass(frozen=True)
class Neighbour:
    """The explained neighbouring error: kind (messages.FREED...), its labelled lines, the fix."""

    kind: str
    places: tuple
    fix: Fix | None

    def to_dict(self) -> dict:
        """The JSON object of the report's "neighbour" field."""
        return {"kind": self.kind, "places": [p.to_dict() for p in self.places],
                "fix": None if self.fix is None else self.fix.to_dict()}

    def renamed(self, names: dict) -> Neighbour:
        """The same with each frame's file renamed by `names` (a notebook's cells: "Cell In[3]")."""
        places = tuple(dataclasses.replace(p, frames=tuple(dataclasses.replace(f, file=names.get(f.file, f.file))
                                                           for f in p.frames)) for p in self.places)
        return dataclasses.replace(self, places=places)

    def lines(self) -> list:
        """The report's text after Python's traceback."""
        out = [HEADINGS[self.kind]]
        for p in self.places:
            out += _lines(p.label, p.frames, f"   ({p.note})" if p.note else "", callers=1)
        return out + ([] if self.fix is None else _fix_lines(self.fix))


def _at(frames: tuple, what: str = "") -> str:
    """`code` (file:line) of the innermost frame, for the advice's sentences."""
    if not frames:
        return what or "a line fitlab.explain did not see"
    f = frames[-1]
    code = f.code.split("  #", 1)[0]  # the line's code without its comment
    return f"`{code}` ({os.path.basename(f.file)}:{f.line})"


def _freed(f: fr.Freed) -> Neighbour:
    built, joined, first = (stacks.user_frames(s) for s in (f.built, f.joined, f.first))
    unseen = "made before the recording started: record the forward too" if f.node and not built else ""
    places = [Place(BUILT_AT, built, unseen or (f"{f.node}, its saved tensors freed" if f.node else ""))]
    if joined and joined != built:
        places.append(Place("used again", joined))
    if first:
        places.append(Place("freed by", first, "the first backward, without retain_graph=True"))
    places.append(Place("failed at", stacks.user_frames(f.failed)))
    if f.cause is None:
        return Neighbour(FREED, tuple(places), Fix("freed_graph", FREED_GRAPH))
    text = CAUSES[f.cause].advice.format(built=_at(built), first=_at(first, "an earlier backward()"))
    if f.cause == "freed_shared_forward":
        at = _shared_sites(built, joined, [stacks.user_frames(s) for s in f.entered])
    else:  # the cause's codemod (a carried state or a value made once detached) where the graph was built
        at = {built[-1].file: Site(saved=tuple(b.line for b in built if b.file == built[-1].file))} if built else {}
    return Neighbour(FREED, tuple(places), Fix(f.cause, text, *advice.apply(f.cause, at)))


def _shared_sites(built: tuple, joined: tuple, entered: list) -> dict:
    """path -> Site of a shared forward's detach: each use of the shared part by the first graph is
    followed out of the calls it shares with the second graph's use (a module's forward, a helper
    both losses call) to the first frame where the two differ: that line feeds the first backward
    only (written); saved: the line of the same function that built the shared part; failed: the
    second graph's line there (where the codemod must not edit)."""
    def key(f):
        return f.file, f.function
    sites: dict = {}
    for e in entered:
        k = next((i for i, (a, b) in enumerate(zip(e, joined)) if a != b), min(len(e), len(joined)))
        if k >= len(e):
            continue   # every line of this use is also the second graph's: no line feeds the first alone
        at = e[k]
        saved = tuple(b.line for b in built if key(b) == key(at))
        failed = tuple(j.line for j in joined[k:k + 1] if key(j) == key(at))
        old = sites.get(at.file, Site())
        sites[at.file] = Site(saved=old.saved or saved, written=tuple(dict.fromkeys((*old.written, at.line))),
                              failed=tuple(dict.fromkeys((*old.failed, *failed))))
    return sites


def _written(kind: str, w: wr.Written) -> Neighbour:
    written = stacks.user_frames(w.written)
    leaf = w.name or "a tensor"
    places = [Place(WRITTEN_AT, written)]
    fill = {"leaf": leaf, "value": w.value or "a tensor that requires grad"}
    if w.cause in ("multi_view_write", "function_view_write", "hook_view_write"):
        made = stacks.user_frames(w.made)
        places.insert(0, Place("view made", made, w.maker or ""))
        maker = normalise_producer(w.maker) if w.maker else None  # "UnbindBackward0" -> "Unbind"
        maker = maker.lower() if maker and w.cause == "multi_view_write" else maker
        fill = {"view": leaf, "maker": f"`{maker}`" if maker else "one call",
                "made": f" at {_at(made)}" if made else ""}
    if w.cause == "hook_view_write":
        places[:0] = [Place("hook set", (r,)) for r in w.registered]
        fill = {"registered": "".join(f" at {_at((r,))}" for r in w.registered),
                "writer": f"`{w.writer}`" if w.writer else "this line"}
    return Neighbour(kind, tuple(places), Fix(w.cause, CAUSES[w.cause].advice.format(**fill), *_edits(w)))


def _edits(w: wr.Written) -> tuple:
    """(edited lines, sites, why) of the cause's codemod (advice.apply; the sites are what --fix
    applies it at again): at the write, or for a Function's view where it is made."""
    made = w.cause == "function_view_write"
    at = stacks.user_frames(w.made if made else w.written)
    if not at:
        return (), (), ""
    line = (at[-1].line,)
    site = Site(saved=line) if made else Site(written=line)
    return advice.apply(w.cause, {at[-1].file: site})


def report(exc: BaseException, rec, traceback: str, common: dict) -> Report | None:
    """The Report of a run that died of a neighbouring error, None if `exc` is none of them."""
    found = neighbour(str(exc)) if isinstance(exc, RuntimeError) else None
    if found is None:
        return None
    explained, notes = None, ()
    try:
        if found.kind == FREED and rec.freed is not None and rec.freed.exc is exc:
            explained = _freed(rec.freed)
        elif found.kind != FREED:
            w = wr.analyse(exc, found.kind)
            explained = None if w is None else _written(found.kind, w)
    except Exception as inner:  # noqa: BLE001 - the script's error is still reported as Python's
        notes = (f"analysis failed: {inner!r}",)
    if explained is None and not notes:
        notes = ("fitlab.explain did not see the call that raised this error (made outside the recording?)",)
    common = {**common, "notes": tuple(common.get("notes", ())) + notes}
    return Report(found.kind, str(exc), exit_code=1, traceback=traceback, neighbour=explained, **common)
