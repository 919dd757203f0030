"""Reading a pasted traceback: the user's own file and line, and torch's
"backward through the graph a second time", from tracebacks torch and
Python really print."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fitlab.explain import decode
from fitlab.explain.decode import freed_graph, is_transpose, own_line, pasted_lines, traceback_signs

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


def traceback_of(python, tmp_path, source: str, name: str = "train.py") -> str:
    """What python prints when `source`, saved as `name`, dies (`python`: forked_python,
    tests/explain/conftest.py: python's own traceback, torch's frames and all)."""
    script = tmp_path / name
    script.write_text(source)
    done = python(script, cwd=tmp_path)
    assert done.returncode != 0
    return done.stderr


@pytest.mark.slow  # runs the script with python for its traceback
def test_the_users_own_line_is_read_from_a_real_traceback_not_torchs(tmp_path, forked_python):
    text = traceback_of(forked_python, tmp_path, SECOND_BACKWARD)
    frames = pasted_lines(text)
    assert len(frames) >= 2 and any("torch" in f.file for f in frames)   # torch's own frames are there too
    own = own_line(text)
    assert own.file == str(tmp_path / "train.py") and own.line == 5 and own.code == "loss.backward()"
    assert own.function == "<module>"


@pytest.mark.slow  # runs the script with python for its traceback
def test_the_innermost_own_frame_is_named_inside_a_function(tmp_path, forked_python):
    text = traceback_of(forked_python, tmp_path, INPLACE_IN_A_FUNCTION, "model.py")
    assert decode(text) is not None
    own = own_line(text)
    assert (own.line, own.code) == (9, "step(w).backward()")   # torch raises in backward(), from line 9


@pytest.mark.slow  # runs the script with python for its traceback
def test_second_backward_is_recognised_and_is_not_the_inplace_error(tmp_path, forked_python):
    text = traceback_of(forked_python, tmp_path, SECOND_BACKWARD)
    assert freed_graph(text) and decode(text) is None
    assert not freed_graph(traceback_of(forked_python, tmp_path, INPLACE_IN_A_FUNCTION))


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


SCRIPTS = Path(__file__).parent / "scripts"


def fixture_traceback(python, name: str) -> str:
    """What python prints when the fixture script `name` dies of the in-place error (`python`:
    forked_python, tests/explain/conftest.py)."""
    done = python(SCRIPTS / name, cwd=Path.cwd())
    assert done.returncode != 0 and decode(done.stderr) is not None, done.stderr[-2000:]
    return done.stderr


@pytest.mark.slow  # runs the fixture scripts with python for their tracebacks
def test_the_causes_are_ranked_by_the_tracebacks_own_lines(forked_python):
    # The same message pattern (a [n, 1] weight seen transposed, AsStrided) from three scripts:
    # the blog's re-init first only where the traceback shows nothing else.
    texts = {name: fixture_traceback(forked_python, f"{name}.py") for name in ("blog_reinit", "gan_step", "gru_carry")}
    blog, gan, carried = map(decode, texts.values())
    assert {blog.kind, gan.kind, carried.kind} == {"transposed_weight"}
    assert blog.causes[0] == "detach_labels"
    assert gan.causes[0] == "fresh_forward_after_step" and gan.causes[-1] == "detach_labels"   # G_loss.backward()
    assert carried.causes[:2] == ("fresh_forward_after_step", "carried_state")   # backward(retain_graph=True)
    lightning = decode(fixture_traceback(forked_python, "lightning_gan.py"))   # self.manual_backward(g_loss)
    assert lightning.causes[0] == "fresh_forward_after_step"
    # The message alone has no traceback to read: the pattern's order.
    assert decode(texts["gan_step"].splitlines()[-1]).causes[0] == "detach_labels"


# A pre-1.10 traceback as torch 1.x printed it (tensor.py's backward, TBackward without the 0),
# from a GAN's generator step; and its message under a file named after a GAN.
OLD_GAN = textwrap.dedent("""\
    Traceback (most recent call last):
      File "train.py", line 182, in <module>
        main()
      File "train.py", line 140, in main
        losses['g'].backward()
      File "/opt/conda/lib/python3.6/site-packages/torch/tensor.py", line 198, in backward
        torch.autograd.backward(self, gradient, retain_graph, create_graph)
      File "/opt/conda/lib/python3.6/site-packages/torch/autograd/__init__.py", line 100, in backward
        allow_unreachable=True)  # allow_unreachable flag
""") + (
    "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [torch.cuda.FloatTensor [64, 1]], which is output 0 of TBackward, is at version 2; expected "
    "version 1 instead. Hint: enable anomaly detection to find the operation that failed to compute its "
    "gradient, with torch.autograd.set_detect_anomaly(True).")


def test_an_old_gans_traceback_ranks_the_step_first_and_names_the_transpose():
    facts = decode(OLD_GAN)
    assert (facts.producer, facts.producer_name, facts.kind) == ("T", "TBackward", "transposed_weight")
    assert traceback_signs(OLD_GAN) == {"gan"} and facts.causes[0] == "fresh_forward_after_step"
    assert is_transpose(facts.producer) and not is_transpose("AsStrided") and not is_transpose(None)
    # Torch's own frames say nothing: `retain_graph` in tensor.py's line is not the user's.
    plain = OLD_GAN.replace("losses['g'].backward()", "loss.backward()")
    assert traceback_signs(plain) == frozenset() and decode(plain).causes[0] == "detach_labels"
    assert traceback_signs(plain.replace('"train.py"', '"main_gan.py"')) == {"gan"}
    # Old node names without the 0: each normalised to its op and kind.
    for printed, kind in (("ReluBackward", "activation_output"), ("SliceBackward", "index_view"),
                          ("TransposeBackward", "transposed_weight"), ("AddmmBackward", "other")):
        facts = decode(OLD_GAN.replace("TBackward", printed))
        assert facts.producer_name == printed and facts.kind == kind, (printed, facts)
    # An activation's output is no weight: a GAN's step does not move an in-place module down.
    assert decode(OLD_GAN.replace("TBackward", "LeakyReluBackward")).causes[0] == "inplace_module"
