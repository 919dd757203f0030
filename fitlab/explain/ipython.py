"""The IPython / Jupyter extension: `%load_ext fitlab.explain`, then a cell that starts with
`%%explain` runs under the recorder. When it dies of the in-place error, IPython shows its
traceback as usual and then the report, the cell's lines named as IPython names them
(`Cell In[3], line 8`); the kernel keeps running. The report is also the cell's value
`_explained` in the user's namespace.

`%%explain --fix` also proves the fix (fix/), of a neighbouring error too: the edited cell is
rerun on copies of the names it reads, taken before it ran (the user's namespace is not
touched), and the verdict, the diff and the edited cell are shown after the report.
"""

from __future__ import annotations

import dataclasses
import html

from fitlab.explain import stack
from fitlab.explain.neighbours.messages import raised
from fitlab.explain.notebook import cell_names, named_for_ipython, recorded, recording
from fitlab.explain.report import format_report


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
        result = shell.run_cell(cell, store_history=False)
    # By the cells' files, not as IPython names them: --fix edits the files. A neighbouring error
    # is read off the exception itself (a write refused as it ran reaches no hook of the recorder).
    error = result.error_in_exec if raised(getattr(result, "error_in_exec", None)) else None
    report = recorded(error, rec.recorder)
    if report is None:
        return
    names = cell_names(shell)
    text = ""
    inplace = report.status == "inplace_error" and rec.recorder.failure is not None
    if fixing and (inplace or report.neighbour is not None and report.neighbour.fix is not None):
        # The line that failed: the failing backward's, or a neighbouring error's last labelled line.
        failed = report.failed_at or (report.neighbour.places[-1].frames if report.neighbour else ())
        path = failed[-1].file if failed else None
        if path in names:
            program = fix.Program("cell", path, source=cell, namespace=inputs, label=names[path], seed=seed)
            proof = fix.prove(program, report, rec.recorder, shell.user_ns)
            report = dataclasses.replace(report, proof=proof)
            text = "\n" + fix.format_proof(proof)
            if path in proof.files and proof.verdict not in (fix.DID_NOT_HELP, fix.NO_EDIT):
                text += "\n\nThe edited cell:\n" + proof.files[path].rstrip("\n")
        else:
            text = "\n--fix: the line that failed is not this cell's own, so the cell is not edited"
    report = named_for_ipython(dataclasses.replace(report, traceback=None), names)
    shell.user_ns["_explained"] = report
    _display(format_report(report) + text)


# The cell that holds `%%explain` is not the program: its frames stop here.
stack.add_boundary(explain.__code__)


def load_ipython_extension(shell) -> None:
    """Register `%%explain` (called by `%load_ext fitlab.explain`)."""
    shell.register_magic_function(lambda line, cell: explain(line, cell, shell), "cell", "explain")
