"""The decoder's form: nothing is decoded until Decode is pressed; a pasted
traceback's own file and line are named as plain text; torch's freed-graph
error gets its own explanation; a scalar is worded as one; the command's
install is one line."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from tests.page.helpers import open_page
from tests.page.test_script import decode_page, page_words

FREED = textwrap.dedent("""\
    import torch
    w = torch.ones(3, requires_grad=True)
    loss = (w.exp() * 2).sum()
    loss.backward()
    loss.backward()
""")
SCALAR = textwrap.dedent("""\
    import torch
    w = torch.ones((), requires_grad=True)
    y = w.exp()
    y.add_(1)
    y.backward()
""")


def traceback_of(tmp_path, source: str) -> tuple[str, str]:
    script = tmp_path / "train.py"
    script.write_text(source)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    return done.stderr, str(script)


def test_nothing_is_decoded_until_decode_is_pressed():
    message = "Trying to backward through the graph a second time"
    at = open_page()
    at.text_area(key="decode_message").input(message).run()
    assert not [i for i in at.info if "backward error" in i.value]
    at.text_area(key="decode_message").input(message)
    next(b for b in at.button if b.label == "Decode").click().run()
    assert any("*other* backward error" in i.value for i in at.info)


@pytest.mark.slow  # runs a script with python for its traceback
def test_a_pasted_traceback_names_its_own_file_and_line_as_plain_text(tmp_path):
    text, path = traceback_of(tmp_path, SCALAR)
    at = decode_page(text)
    [line] = [c for c in at.code if c.value.startswith(path)]
    assert line.value == f"{path}:5  y.backward()" and line.language == "text"
    assert not any(path in m.value for m in at.markdown)        # never markdown of pasted text


@pytest.mark.slow  # runs a script with python for its traceback
def test_the_freed_graph_error_gets_its_own_short_explanation(tmp_path):
    text, path = traceback_of(tmp_path, FREED)
    assert "Trying to backward through the graph a second time" in text
    at = decode_page(text)
    [answer] = [i.value for i in at.info if "backward" in i.value]
    assert "Trying to backward through the graph a second time" in answer and ".detach()" in answer
    assert not answer.startswith("That is not this error")
    assert any(c.value == f"{path}:5  loss.backward()" for c in at.code)


@pytest.mark.slow  # runs a script with python for its traceback
def test_a_scalar_is_worded_as_a_scalar_and_the_install_is_one_line(tmp_path):
    text, _ = traceback_of(tmp_path, SCALAR)
    assert "[torch.FloatTensor []]" in text and torch.__version__
    words = page_words(decode_page(text))
    assert "a float32 scalar (shape `[]`) on the CPU" in words
    assert "tensor on the CPU of a scalar" not in words
    assert "python -m pip install ." in words


def _raised(write) -> str:
    """The message torch raises for `write` (a function that writes in place)."""
    with pytest.raises(RuntimeError) as info:
        write()
    return str(info.value)


def _leaf_update():
    w = torch.ones(3, requires_grad=True)
    w -= 0.1 * torch.ones(3)


def _unbind_write():
    for row in torch.ones(2, 3, requires_grad=True) * 2:
        row.mul_(2)


@pytest.mark.parametrize("write,cause", [(_leaf_update, "leaf_update"), (_unbind_write, "multi_view_write")])
def test_a_neighbouring_error_is_named_with_the_registrys_causes_not_refused(write, cause):
    from fitlab.explain.causes import CAUSES

    at = decode_page(_raised(write))
    words = page_words(at)
    assert not any(i.value.startswith("That is not this error") for i in at.info)
    assert CAUSES[cause].sign in words and CAUSES[cause].fix in words
    assert "python -m fitlab.explain your_script.py" in words
