"""fitlab.explain in a real Jupyter kernel (ipykernel driven by nbclient): `%load_ext
fitlab.explain`, `%%explain` and `%%explain --fix`, and `recording()` in cells; the kernel keeps
running."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.slow  # a Jupyter kernel

ROOT = Path(__file__).resolve().parents[2]

CELLS = [
    "%load_ext fitlab.explain\nimport torch\nimport fitlab.explain",
    # Cell In[2]: dies of the error under %%explain.
    "%%explain\nx = torch.randn(3, requires_grad=True)\ny = x.exp()\ny += 1\ny.sum().backward()",
    # The kernel still runs; the report is in the namespace.
    "print(_explained.status, _explained.fix.kind, [f.file for f in _explained.saved_at])",
    # recording(): the user catches the error inside the block.
    ("with fitlab.explain.recording() as rec:\n"
     "    h = torch.tanh(torch.randn(4, 2, requires_grad=True))\n"
     "    h[:, 0] = 0\n"
     "    try:\n"
     "        h.sum().backward()\n"
     "    except RuntimeError:\n"
     "        pass\n"
     "print(rec.report.status, rec.report.fix.kind, rec.report.writes[0].frames[-1].line)"),
    # recording() of a correct block: no report.
    ("with fitlab.explain.recording() as ok:\n"
     "    torch.exp(torch.randn(3, requires_grad=True)).sum().backward()\n"
     "print('report', ok.report)"),
    # %%explain on a cell that works: nothing extra shown.
    "%%explain\nprint('fine', torch.ones(2).sum().item())",
    # Cell In[7]: the forward, run outside any recording...
    "w = torch.randn(3, requires_grad=True)\nz = w.sigmoid()\nz.mul_(2)",
    # ...and recording() around only the backward, as one tries first.
    ("with fitlab.explain.recording() as late:\n"
     "    try:\n"
     "        z.sum().backward()\n"
     "    except RuntimeError:\n"
     "        pass\n"
     "print(late)"),
    "base = torch.randn(3, requires_grad=True)\nseen = []",
    # Cell In[10]: --fix reruns the edited cell on copies of what it reads.
    "%%explain --fix\nseen.append(1)\ny = torch.exp(base)\ny += 1\ny.sum().backward()",
    "print(len(seen), base.grad is None, _explained.proof.verdict)",
    # Cell In[12]: a neighbouring error, a hand-written update of a leaf with grad mode on.
    "%%explain\nw = torch.ones(3, requires_grad=True)\nw -= 0.1 * torch.ones(3)",
    "print(_explained.status, _explained.neighbour.fix.kind)",
    # Cell In[14]: --fix on that neighbouring error.
    "%%explain --fix\nw = torch.ones(3, requires_grad=True)\nw -= 0.1 * torch.ones(3)",
]


@pytest.fixture(scope="module")
def outputs():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    client = nbclient.NotebookClient(nb, timeout=240, kernel_name="python3", allow_errors=True)
    client.execute(cwd=str(ROOT))
    return [c.outputs for c in nb.cells]


def text_of(outs: list) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outs)


def test_explain_magic_names_the_cells_lines_and_the_fix(outputs):
    outs = outputs[1]
    assert [o["ename"] for o in outs if o["output_type"] == "error"] == ["RuntimeError"]
    [shown] = [o for o in outs if o["output_type"] == "display_data"]
    text = shown["data"]["text/plain"]
    # Numbered as IPython's own traceback of the cell numbers them (the body after %%explain).
    tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(next(o for o in outs if o["output_type"] == "error")["traceback"]))
    assert "Cell In[2], line 4" in tb
    assert "saved at   Cell In[2], line 2  y = x.exp()" in text
    assert "written at Cell In[2], line 3  y += 1" in text
    assert "failed at  Cell In[2], line 4  y.sum().backward()" in text
    assert "y = y + 1" in text
    # Only the cell's own lines: not the outer cell that called the magic, not IPython's.
    assert "run_cell_magic" not in text and "site-packages" not in text
    assert "<pre>" in shown["data"]["text/html"] and "y += 1" in shown["data"]["text/html"]


def test_ipython_shows_none_of_fitlabs_frames(outputs):
    # __tracebackhide__ in the recorder's frames: IPython's traceback of the cell as without it.
    error = next(o for o in outputs[1] if o["output_type"] == "error")
    tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))
    assert "backward" in tb
    assert "fitlab/explain/" not in tb, tb  # the package's own files (a venv's path may hold "fitlab")


def test_recording_only_the_backward_says_so_once_with_the_cells_names(outputs):
    text = text_of(outputs[7])
    assert text.count("was made before the recording started") == 1, text
    assert "no longer recorded" not in text and "not recorded" not in text
    assert "failed at  Cell In[8], line 3  z.sum().backward()" in text, text


def test_kernel_keeps_running_and_holds_the_report(outputs):
    assert text_of(outputs[2]).split()[:2] == ["inplace_error", "augmented_assignment"]


def test_recording_explains_an_error_the_block_caught(outputs):
    assert text_of(outputs[3]).split() == ["inplace_error", "index_assignment", "3"]


def test_recording_of_a_correct_block_is_none_and_magic_adds_nothing(outputs):
    assert text_of(outputs[4]).strip() == "report None"
    assert text_of(outputs[5]).strip() == "fine 2.0"
    assert all(o["output_type"] == "stream" for o in outputs[5])


def test_explain_fix_proves_the_edit_and_shows_the_edited_cell(outputs):
    outs = outputs[9]
    assert [o["ename"] for o in outs if o["output_type"] == "error"] == ["RuntimeError"]
    [shown] = [o for o in outs if o["output_type"] == "display_data"]
    text = shown["data"]["text/plain"]
    assert "1. augmented_assignment written at Cell In[10], line 3: PROVED" in text
    assert "--- a/Cell In[10]" in text and "-y += 1\n+y = y + 1" in text
    edited = text.split("The edited cell:\n")[1]
    assert edited == "seen.append(1)\ny = torch.exp(base)\ny = y + 1\ny.sum().backward()"


def test_explain_fix_leaves_the_users_namespace_as_the_cell_left_it(outputs):
    # The cell ran once for real (seen has one item, base no gradient: it failed); the reruns
    # worked on copies.
    assert text_of(outputs[10]).split() == ["1", "True", "proved"]


def test_explain_magic_explains_a_neighbouring_error_with_the_cells_lines(outputs):
    [shown] = [o for o in outputs[11] if o["output_type"] == "display_data"]
    text = shown["data"]["text/plain"]
    assert "written at Cell In[12], line 2  w -= 0.1 * torch.ones(3)" in text, text
    assert "with torch.no_grad():" in text
    assert text_of(outputs[12]).split() == ["leaf_inplace", "leaf_update"]


def test_explain_fix_runs_the_edit_of_a_neighbouring_error_and_shows_the_edited_cell(outputs):
    [shown] = [o for o in outputs[13] if o["output_type"] == "display_data"]
    text = shown["data"]["text/plain"]
    assert "1. leaf_update written at Cell In[14], line 2: RUNS: the error is gone" in text, text
    edited = text.split("The edited cell:\n")[1]
    assert edited == "w = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    w -= 0.1 * torch.ones(3)"
