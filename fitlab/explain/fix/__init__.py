"""`--fix`: apply the cause's edit to a copy of the user's files, rerun the copy, and say what it proved.

A compiler's fix-it is advice; here the edited program is run. After the recorded run died of the
in-place error, the cause's edit (causes.py's `codemod`, at the sites advice.py found) is applied
to a temporary copy of the files it touches, and the copy is rerun under the recorder with the same
arguments and the same random state, up to the backward that failed and `steps` past it (and a
timeout). Then one verdict:

- PROVED: the error is gone; each backward before the one that failed computes the gradients it
  computed in the first run, and from it on each computes the reference's: those of the original
  program when every saved tensor keeps the value it had when saved (the original rerun with
  torch.autograd.graph.saved_tensors_hooks packing a clone), to float tolerance;
- RUNS: the error is gone, and the verdict says why no reference applies: the edit changes what
  is computed (causes.py's RUNS causes: a detach, a fresh forward), or the copy ended before the
  backward that failed;
- NEXT_WRITE: the edit removed this failure and another write now fails: that one is explained
  and edited too (up to MAX_CULPRITS), the last verdict given with all the edits together;
- DID_NOT_HELP: the same failure remains, the edited copy dies of another error, or its gradients
  differ from the reference's (the edit changed what the program computes): the edit is not
  presented as a fix, and --write writes nothing.
- NO_EDIT: the cause has no mechanical edit, or its codemod does not apply to these lines (or
  cannot read the file): the reason in one line; the report and the traceback print as ever.

A neighbouring error (a leaf written in place, a view a custom Function returned, a graph an
earlier backward freed...) goes the same way, rerun to the line that failed and `steps` backwards
past it, but it has no reference (the original never ran past that line): at best it RUNS. But
for a forward shared by two losses (causes.RETAINED), whose reference is the original with every
graph kept: PROVED when the edited copy computes its gradients and ends with its weights (retained.py).

Modules: rerun.py (rerunning the program), verdict.py (the edit, the reference, the verdict),
retained.py (the verdict against the graphs kept), diff.py (the proof, its diff and --write).

The user's files are never written here; `write_files()` does that, on request, keeping a backup. The
cost: one rerun of the program to the failure per culprit, plus one clone-on-save run of the
original for a verdict that needs a reference.
"""

from __future__ import annotations

from fitlab.explain.causes import DID_NOT_HELP, NEXT_WRITE, NO_EDIT, PROVED, RUNS
from fitlab.explain.fix.diff import format_proof, unified_diff, write_files
from fitlab.explain.fix.rerun import BoundedRecorder, Program, cell_inputs, random_state
from fitlab.explain.fix.verdict import STEPS, TIMEOUT, Culprit, Proof, gradient_gap, prove, run_fixed

__all__ = ["DID_NOT_HELP", "NEXT_WRITE", "NO_EDIT", "PROVED", "RUNS", "STEPS", "TIMEOUT", "BoundedRecorder",
           "Culprit", "Program", "Proof", "cell_inputs", "format_proof", "gradient_gap", "prove", "random_state",
           "run_fixed", "unified_diff", "write_files"]
