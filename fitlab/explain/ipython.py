"""The IPython / Jupyter extension: `%load_ext fitlab.explain`, then a cell that starts with
`%%explain` runs under the recorder. When it dies of the in-place error, IPython shows its
traceback as usual and then the report, the cell's lines named as IPython names them
(`Cell In[3], line 8`); the kernel keeps running. The report is also the cell's value
`_explained` in the user's namespace.

`%%explain --fix` also proves the fix (fix.py): the edited cell is rerun on copies of the names
it reads, taken before it ran (the user's namespace is not touched), and the verdict, the diff
and the edited cell are shown after the report.
"""

from __future__ import annotations

import dataclasses
import html

from fitlab.explain import stack
from fitlab.explain.notebook import recorded, recording
from fitlab.explain.report import format_report


def _cell_names(shell) -> dict:
    """Cell file name -> "Cell In[N]", from IPython's compiler (as its tracebacks name cells)."""
    names = getattr(shell.compile, "_filename_map", {}) or {}
    return {path: f"Cell In[{n}]" for path, n in names.items()}


def _renamed(chain: tuple, names: dict) -> tuple:
    return tuple(dataclasses.replace(f, file=names.get(f.file, f.file)) for f in chain)


def _named_fix(fix, names: dict):
    return None if fix is None else dataclasses.replace(fix, edits=tuple(
        dataclasses.replace(e, file=names.get(e.file, e.file)) for e in fix.edits))


def named_for_ipython(report, names: dict):
    """The report with each frame in a cell named "Cell In[N]"."""
    if not names:
        return report
    also = tuple(dataclasses.replace(
        a, saved_at=_renamed(a.saved_at, names), fix=_named_fix(a.fix, names),
        writes=tuple(dataclasses.replace(w, frames=_renamed(w.frames, names)) for w in a.writes))
        for a in report.also)
    return dataclasses.replace(
        report, saved_at=_renamed(report.saved_at, names), failed_at=_renamed(report.failed_at, names),
        writes=tuple(dataclasses.replace(w, frames=_renamed(w.frames, names)) for w in report.writes),
        silent_writes=tuple(dataclasses.replace(s, frames=_renamed(s.frames, names))
                            for s in report.silent_writes),
        fix=_named_fix(report.fix, names), also=also)


def _display(text: str) -> None:
    from IPython.display import display
    display({"text/plain": text, "text/html": f"<pre>{html.escape(text)}</pre>"}, raw=True)


def explain(line: str, cell: str, shell=None) -> None:
    """The `%%explain` cell magic: run the cell under the recorder; show the report if it failed
    of the in-place error or wrote a saved tensor silently."""
    if shell is None:
        from IPython import get_ipython
        shell = get_ipython()
    fixing = line.split() == ["--fix"]
    recorder = None
    if fixing:
        from fitlab.explain import fix
        # What a rerun starts from, taken before the cell runs: its inputs, the random state.
        inputs, seed = fix.cell_inputs(cell, shell.user_ns), fix.random_state()
        recorder = fix.BoundedRecorder(keep_grads=True)
    with recording(recorder) as rec:
        # IPython catches and shows the cell's error; the recording saw the in-place one.
        shell.run_cell(cell, store_history=False)
    # By the cells' files, not as IPython names them: --fix edits the files.
    report = recorded(None, rec.recorder)
    if report is None:
        return
    names = _cell_names(shell)
    text = ""
    if fixing and report.status == "inplace_error" and rec.recorder.failure is not None:
        path = report.failed_at[-1].file if report.failed_at else None
        if path in names:
            program = fix.Program("cell", path, source=cell, namespace=inputs, label=names[path], seed=seed)
            proof = fix.prove(program, report, rec.recorder, shell.user_ns)
            report = dataclasses.replace(report, proof=proof)
            text = "\n" + fix.format_proof(proof)
            if path in proof.files and proof.verdict not in (fix.DID_NOT_HELP, fix.NO_EDIT):
                text += "\n\nThe edited cell:\n" + proof.files[path].rstrip("\n")
        else:
            text = "\n--fix: the backward that failed is not this cell's own line, so the cell is not edited"
    report = named_for_ipython(dataclasses.replace(report, traceback=None), names)
    shell.user_ns["_explained"] = report
    _display(format_report(report) + text)


# The cell that holds `%%explain` is not the program: its frames stop here.
stack.add_boundary(explain.__code__)


def load_ipython_extension(shell) -> None:
    """Register `%%explain` (called by `%load_ext fitlab.explain`)."""
    shell.register_magic_function(lambda line, cell: explain(line, cell, shell), "cell", "explain")
