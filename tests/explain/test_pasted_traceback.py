"""Reading a pasted traceback: the user's own file and line, and torch's
"backward through the graph a second time", from tracebacks torch and
Python really print."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from fitlab.explain import decode
from fitlab.explain.decode import freed_graph, own_line, pasted_lines

SECOND_BACKWARD = textwrap.dedent("""\
    import torch
    w = torch.ones(3, requires_grad=True)
    loss = (w.exp() * 2).sum()
    loss.backward()
    loss.backward()
""")
INPLACE_IN_A_FUNCTION = textwrap.dedent("""\
    import torch

    def step(w):
        y = w.sigmoid()
        y.mul_(2)
        return y.sum()

    w = torch.ones(3, requires_grad=True)
    step(w).backward()
""")


def traceback_of(tmp_path, source: str, name: str = "train.py") -> str:
    script = tmp_path / name
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    return done.stderr


@pytest.mark.slow  # runs the script with python for its traceback
def test_the_users_own_line_is_read_from_a_real_traceback_not_torchs(tmp_path):
    text = traceback_of(tmp_path, SECOND_BACKWARD)
    frames = pasted_lines(text)
    assert len(frames) >= 2 and any("torch" in f.file for f in frames)   # torch's own frames are there too
    own = own_line(text)
    assert own.file == str(tmp_path / "train.py") and own.line == 5 and own.code == "loss.backward()"
    assert own.function == "<module>"


@pytest.mark.slow  # runs the script with python for its traceback
def test_the_innermost_own_frame_is_named_inside_a_function(tmp_path):
    text = traceback_of(tmp_path, INPLACE_IN_A_FUNCTION, "model.py")
    assert decode(text) is not None
    own = own_line(text)
    assert (own.line, own.code) == (9, "step(w).backward()")   # torch raises in backward(), from line 9


@pytest.mark.slow  # runs the script with python for its traceback
def test_second_backward_is_recognised_and_is_not_the_inplace_error(tmp_path):
    text = traceback_of(tmp_path, SECOND_BACKWARD)
    assert freed_graph(text) and decode(text) is None
    assert not freed_graph(traceback_of(tmp_path, INPLACE_IN_A_FUNCTION))


def test_a_notebook_cell_and_ipythons_file_lines_are_read():
    text = textwrap.dedent("""\
        RuntimeError                              Traceback (most recent call last)
        Cell In[7], line 12
             10 opt.step()
             11 x = 1
        ---> 12 loss.backward()
        File ~/venv/lib/python3.11/site-packages/torch/_tensor.py:648, in Tensor.backward(self, gradient)
            646         inputs=inputs,
        --> 648 torch.autograd.backward(
        RuntimeError: Trying to backward through the graph a second time""")
    own = own_line(text)
    assert (own.file, own.line, own.code) == ("Cell In[7]", 12, "loss.backward()")
    assert [f.line for f in pasted_lines(text)] == [12, 648]


def test_text_with_no_traceback_names_no_line():
    assert own_line("RuntimeError: one of the variables needed for gradient computation") is None
    assert pasted_lines(None) == () and own_line("") is None
