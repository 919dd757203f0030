"""The verdict of --fix: the cause's codemod applied to the files the report points at (dispatched
by the registry of causes), the edited copy rerun, and its gradients compared, backward by backward,
with the program's own before the failure and with the reference's from it on.

A neighbouring error (neighbours/: a leaf written in place, a view a custom Function returned...)
is fixed the same way, from its report's fix, but has no reference: the original dies at the
line that failed however its saved tensors are kept, so it never computed the gradients past it.
Its edited copy that runs (to the line that failed and `steps` backwards past it, computing
before that line what the program computed) RUNS, with the sentence why no reference applies; a
forward shared by two losses is judged against the original with its graphs kept (retained.py)."""

from __future__ import annotations

import ast
import os
from dataclasses import replace

import torch

from fitlab.explain.causes import (
    CAUSES,
    DID_NOT_HELP,
    NEXT_WRITE,
    NO_EDIT,
    PROVED,
    REFERENCE,
    RETAINED,
    RUNS,
    UNREFERENCED,
)
from fitlab.explain.fix.diff import Culprit, Proof, ran, unified_diff
from fitlab.explain.fix.rerun import BEFORE, BoundedRecorder, Program, bounded, fingerprint
from fitlab.explain.fix.retained import judged as judged_retained
from fitlab.explain.graph import storage_key
from fitlab.explain.neighbours.messages import BUILT_AT, WRITTEN_AT
from fitlab.explain.report import Report

# Backwards run past the one that failed, by default (--fix-steps), and the seconds a rerun may take.
STEPS = 1
TIMEOUT = 120.0
# Culprits edited one after another before giving up.
MAX_CULPRITS = 4
# Float tolerance of "equal to the reference": the same ops in another order round differently.
RTOL, ATOL = 1e-5, 1e-6


def _innermost(chain: tuple):
    return chain[-1] if chain else None


def _fix_of(report: Report):
    """The fix of an explained failure: the in-place error's, or a neighbouring error's (None for others)."""
    return report.neighbour.fix if report.neighbour is not None else report.fix


def _explained(report: Report) -> bool:
    return report.status == "inplace_error" or report.neighbour is not None


def _culprit(report: Report) -> tuple:
    """(label, frame) of the line the fix is for: the write (the in-place error's, a leaf's or a
    view's), or for a freed graph the line that built it; frame None if no line of the user's."""
    if report.neighbour is not None:
        places = {p.label: p.frames for p in report.neighbour.places}
        label = WRITTEN_AT if WRITTEN_AT in places else BUILT_AT
        return label, _innermost(places.get(label, ()))
    return WRITTEN_AT, _innermost(report.writes[0].frames) if report.writes else None


def _where(program: Program, frame) -> str:
    if frame is None:
        return "(no line of yours)"
    path = program.original_of(frame.file)
    if program.label is not None and path == program.path:
        return f"{program.label}, line {frame.line}" if program.kind == "cell" else f"{program.label}:{frame.line}"
    return f"{os.path.basename(path) if not path.startswith('<') else path}:{frame.line}"


def _sources(program: Program, texts: dict, paths) -> dict:
    """path -> text of each file named (an edited copy's text where there is one)."""
    out = {}
    for p in paths:
        orig = program.original_of(p)
        text = texts.get(orig, program.text_of(orig))
        if text is not None:
            out[orig] = text
    return out


def _stale_name(report: Report, ns: dict, storage) -> str | None:
    """The name, at the saved line, whose tensor shares the written storage (from the namespace
    the run ended with), or None."""
    frame = _innermost(report.saved_at)
    if frame is None or storage is None:
        return None
    try:
        names = [n.id for n in ast.walk(ast.parse(frame.code)) if isinstance(n, ast.Name)]
    except SyntaxError:
        return None
    for name in names:
        v = ns.get(name)
        if isinstance(v, torch.Tensor) and storage_key(v) == storage:
            return name
    return None


def edited(program: Program, report: Report, texts: dict, ns: dict, storage) -> tuple:
    """(the files' text, path -> text, the earlier edits kept, with the cause's codemod applied at
    the sites advice.py found, "") or (None, why in one line). The codemod is the cause's own
    (causes.py); the name holding the written tensor at the saved line, found in the namespace the
    run ended with, is given to it where advice.py could not name it."""
    fix = _fix_of(report)
    codemod = CAUSES[fix.kind].codemod if fix is not None and fix.kind in CAUSES else None
    if codemod is None or not fix.sites:
        why = CAUSES[fix.kind].no_edit if fix is not None and fix.kind in CAUSES else ""
        return None, f"no edit: {why}; the advice above stands" if why else "no mechanical edit applies to these lines"
    name = _stale_name(report, ns, storage)
    new, why = dict(texts), ""
    for path, site in fix.sites:
        path = program.original_of(path)
        source = new.get(path, program.text_of(path))
        got, reason = codemod.apply(source, replace(site, name=site.name or name), path) if source else (
            None, f"no source for {os.path.basename(path)}")
        if got is None:
            why = why or reason
        else:
            new[path] = got
    if new == texts:
        return None, f"no edit: {why or fix.why or 'the edit does not apply to these lines'}"
    return new, ""


def _key(report: Report) -> tuple:
    """What makes a failure the same one: the code of its saved and written lines (a neighbouring
    error: its kind and the code of the line its fix is for)."""
    if report.neighbour is not None:
        _, frame = _culprit(report)
        return (report.status, frame.code if frame else None)
    saved = _innermost(report.saved_at)
    written = _innermost(report.writes[0].frames) if report.writes else None
    return (saved.code if saved else None, written.code if written else None, report.tensor and report.tensor.node)


def _same(program: Program, again: Report, report: Report) -> bool:
    """Whether the edited copy fails as the program did: _key's match, or, where the edit changed the
    saved line itself (a `.clone()` appended that copies another tensor), the same write hitting
    the same node saved at that same line."""
    if _key(again) == _key(report):
        return True
    if report.neighbour is not None or again.neighbour is not None or _key(again)[1:] != _key(report)[1:]:
        return False
    a, b = _innermost(again.saved_at), _innermost(report.saved_at)
    return (a is not None and b is not None and a.line == b.line
            and program.original_of(a.file) == program.original_of(b.file))


def _sorted(grads: list) -> list:
    """One backward's gradients in an order both programs share: by shape, then the leaf's values."""
    def key(pair):
        leaf, g = pair
        return (tuple(g.shape), str(g.dtype), leaf or (), fingerprint(g))
    return sorted(grads, key=key)


def gradient_gap(got: dict, want: dict, calls) -> float | None:
    """The largest difference between two runs' gradients (backward call number -> what it
    computed) at the given calls, beyond the float tolerance (0.0 when they agree), or None when
    they do not even have the same gradients."""
    worst = 0.0
    for i in calls:
        a, b = got.get(i), want.get(i)
        if a is None or b is None or len(a) != len(b):
            return None
        for (_, ga), (_, gb) in zip(_sorted(a), _sorted(b)):
            if ga.shape != gb.shape:
                return None
            if not torch.allclose(ga, gb, rtol=RTOL, atol=ATOL):
                worst = max(worst, float((ga - gb).abs().max()))
    return worst


def run_fixed(kind: str, target: str, args=(), steps: int = STEPS, timeout: float = TIMEOUT,
              label: str | None = None, check_contents: bool = False) -> Report:
    """Run a script or module (kind "script" or "module") as run_script/run_module do; if it dies
    of the in-place error or a neighbouring one with a fix, prove its cause's edit (see the module's
    docstring): the Report, with
    the Proof as its `proof` when there is one. label: the script's name in the verdict and the
    diff (its path relative to the current folder without it). check_contents: the first run's
    recorder checks saved tensors' contents (Recorder)."""
    program = Program(kind, target, args, label=label)
    rec = BoundedRecorder(keep_grads=True, check_contents=check_contents)
    try:
        report, ns = program.run({}, rec, quiet=False)
    except BaseException:
        program.close()
        raise
    inplace = report.status == "inplace_error" and rec.failure is not None
    if not inplace and (report.neighbour is None or report.neighbour.fix is None):
        program.close()
        return report
    return replace(report, proof=prove(program, report, rec, ns, steps, timeout))


def prove(program: Program, report: Report, first: BoundedRecorder, ns: dict, steps: int = STEPS,
          timeout: float = TIMEOUT) -> Proof:
    """Edit, rerun and judge (see the module's docstring), starting from the first run's report,
    its recorder (kept gradients, the backward calls it made, the last one failed) and the
    namespace it ended with."""
    texts: dict = {}
    backwards, storage = first.backwards, first.failure.storage if first.failure is not None else None
    # What the program computed before it failed: an edit must not change it.
    computed = first.grads
    culprits: list = []
    kind, written, label = None, "(no line of yours)", WRITTEN_AT

    def add(culprit: Culprit) -> None:
        culprits.append(replace(culprit, label=label))
    # A neighbouring error has no reference: the original never ran past the line that failed.
    reference = report.neighbour is None
    try:
        for _ in range(MAX_CULPRITS):
            kind = _fix_of(report).kind if _fix_of(report) else None
            label, frame = _culprit(report)
            written = _where(program, frame)
            new, why = edited(program, report, texts, ns, storage) if kind else (None, "no cause was named")
            if new is None:
                add(Culprit(kind or "unknown", written, NO_EDIT, why))
                break
            bound, keep_from = backwards + steps, first.backwards - BEFORE
            kinds = [c.kind for c in culprits] + [kind]
            retained = not reference and all(CAUSES[k].proof == RETAINED for k in kinds)
            again, again_ns, rec = bounded(program, new, bound, timeout, keep_from=keep_from, weights=retained)
            texts = new
            if _explained(again):
                if _same(program, again, report) or _fix_of(again) is None:
                    add(Culprit(kind, written, DID_NOT_HELP,
                                            "the edited copy fails the same way: this edit is no fix"))
                    break
                other = "" if again.status == report.status else ": " + (again.error or "").split("\n")[0]
                add(Culprit(kind, written, NEXT_WRITE,
                                        f"this failure is gone; another write now fails (below{other})"))
                report, backwards, ns = again, rec.backwards, again_ns
                storage = rec.failure.storage if rec.failure is not None else None
                continue
            if again.status != "finished":
                add(Culprit(kind, written, DID_NOT_HELP,
                                        f"the edited copy dies of another error: {again.error}"))
                break
            add(_judged(program, texts, rec, computed, bound, steps, timeout, kinds, written) if reference
                            else judged_retained(program, rec, bound, steps, timeout, keep_from, kind, written)
                            if retained else _unreferenced(rec, computed, bound, steps, kinds, written))
            break
    except Exception as exc:  # noqa: BLE001 - --fix never stops the run: the report and traceback still print
        first_line = (str(exc).strip().splitlines() or [""])[0]
        add(Culprit(kind or "unknown", written, NO_EDIT,
                                f"--fix could not go on ({type(exc).__name__}: {first_line}); the advice above stands"))
    finally:
        program.close()
    final = culprits[-1].verdict if culprits else NO_EDIT
    return Proof(final, tuple(culprits), unified_diff(program, texts), texts)


def _judged(program: Program, texts: dict, rec: BoundedRecorder, computed: list, bound: int, steps: int,
            timeout: float, kinds: list, written: str) -> Culprit:
    """The verdict of an edited copy that ran to the bound (or to its end): before the backward
    that failed it must compute what the program computed (`computed`, the first run's
    gradients), from it on what the reference computes."""
    kind = kinds[-1]
    until = ran(rec.backwards, rec.stopped, bound, steps)
    changing = [CAUSES[k] for k in dict.fromkeys(kinds) if CAUSES[k].proof != REFERENCE]
    if changing:
        why = "; ".join(c.changes for c in changing)
        return Culprit(kind, written, RUNS, f"the error is gone ({until}); no reference applies: {why}")
    failed = bound - steps
    if rec.backwards < failed:
        return Culprit(kind, written, RUNS, f"the error is gone, but the edited copy ended ({until}) before the "
                                            "backward that failed: nothing to compare")
    first = max(computed, default=0) + 1   # the first run's failing backward
    _, _, ref = bounded(program, {}, bound, timeout, hooks=True, keep_from=first)
    gap = gradient_gap(rec.grads, computed, sorted(computed))
    if gap == 0.0:
        gap = gradient_gap(rec.grads, ref.grads, range(first, rec.backwards + 1))
    if gap == 0.0:
        return Culprit(kind, written, PROVED,
                       f"the error is gone ({until}); the gradients of each backward equal, to float tolerance, "
                       "your program's before the failure and from it on the reference's (the original "
                       "program with every saved tensor keeping its value)")
    differ = "other gradients" if gap is None else f"gradients off by up to {gap:.3g}"
    return Culprit(kind, written, DID_NOT_HELP,
                   f"the error is gone ({until}), but it computes {differ} than the reference (the original with "
                   "every saved tensor keeping its value): this edit changes what your program computes")


def _unreferenced(rec: BoundedRecorder, computed: dict, bound: int, steps: int, kinds: list,
                  written: str) -> Culprit:
    """The verdict of an edited copy of a program that died of a neighbouring error and now ran to
    the bound (or to its end). Past the line that failed no reference exists, so at best it RUNS:
    an edit that changes what is computed says what (as _judged does); one that should not (a
    REFERENCE cause's) must compute before that line what the program computed."""
    kind = kinds[-1]
    past = rec.backwards - (bound - steps)
    until = ("stopped at the timeout, " if rec.stopped == "timeout" else "") + (
        f"{past} backward call{'s' if past != 1 else ''} run past the line that failed" if past > 0 else
        "it ran on past the line that failed" + (", to its end" if rec.stopped is None else ""))
    changing = [CAUSES[k].changes for k in dict.fromkeys(kinds) if CAUSES[k].proof != REFERENCE]
    if changing:
        return Culprit(kind, written, RUNS, f"the error is gone ({until}); no reference applies: {'; '.join(changing)}")
    gap = gradient_gap(rec.grads, computed, sorted(computed))
    if gap != 0.0:
        differ = "other gradients" if gap is None else f"gradients off by up to {gap:.3g}"
        return Culprit(kind, written, DID_NOT_HELP, f"the error is gone ({until}), but before the line that failed "
                       f"it computes {differ} than your program did: this edit changes what your program computes")
    before = "; the backward calls before it computed your program's gradients" if computed else ""
    return Culprit(kind, written, RUNS, f"the error is gone ({until}{before}); no reference applies: {UNREFERENCED}")
