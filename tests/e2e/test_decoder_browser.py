"""The decoder in the browser: a Decode button to press; a pasted
traceback's own file and line named, as plain text; torch's freed-graph
error explained on its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tools.browsing import expect, open_page, rerun_after

pytestmark = pytest.mark.browser

FREED = textwrap.dedent("""\
    import torch
    w = torch.ones(3, requires_grad=True)
    loss = (w.exp() * 2).sum()
    loss.backward()
    loss.backward()
""")


@pytest.mark.parametrize("viewport", [{"width": 1400, "height": 1000}, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])
def test_pressing_decode_names_the_pasted_tracebacks_own_line(pages, server, viewport, tmp_path):

    script = tmp_path / "gan_**train**.py"     # a file name with markup in it stays text
    script.write_text(FREED)
    text = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120).stderr
    with pages.page(viewport=viewport) as page:
        open_page(page, server)
        page.get_by_text("Decode your own error message").click()
        box = page.get_by_label("Paste a \"modified by an inplace operation\" error", exact=False)
        box.fill(text)
        button = page.get_by_role("button", name="Decode")
        expect(button).to_be_visible()
        rerun_after(page, lambda: button.click())
        answer = page.locator(".st-key-decoded")
        expect(answer.locator("pre", has_text=f"{script}:5")).to_contain_text("loss.backward()")
        expect(answer).to_contain_text("Trying to backward through the graph a second time")
        expect(answer).not_to_contain_text("That is not this error")
        assert "gan_**train**.py" in answer.locator("pre").first.inner_text()


OLD_TRANSPOSE = ("RuntimeError: one of the variables needed for gradient computation has been modified by an "
                 "inplace operation: [torch.FloatTensor [512, 45]], which is output 0 of TBackward, is at "
                 "version 2; expected version 1 instead. Hint: enable anomaly detection to find the operation "
                 "that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).")


def decode_text(page, text: str):
    """Paste `text` into the decoder, press Decode, and return the answer's container."""
    page.get_by_label("Paste a \"modified by an inplace operation\" error", exact=False).fill(text)
    rerun_after(page, lambda: page.get_by_role("button", name="Decode").click())
    return page.locator('[data-testid="stExpander"]', has_text="Decode your own error message")


def test_the_decoder_ranks_by_the_traceback_names_old_producers_and_says_what_to_paste(page, server):
    from pathlib import Path

    scripts = Path(__file__).resolve().parents[1] / "explain" / "scripts"
    gan = subprocess.run([sys.executable, str(scripts / "gan_step.py")], capture_output=True, text=True,
                         timeout=300).stderr
    assert "G_loss.backward()" in gan
    open_page(page, server)
    page.get_by_text("Decode your own error message").click()
    # An empty box: what to paste, not nothing.
    expander = decode_text(page, "")
    expect(expander.get_by_text("The box is empty", exact=False)).to_be_visible()
    # A GAN's traceback, its own line G_loss.backward(): the optimizer step first, not the blog's re-init.
    decode_text(page, gan)
    causes = page.locator(".st-key-decoded ol > li")
    expect(causes.first).to_contain_text("optimizer.step()")
    expect(causes.first).not_to_contain_text("re-initialised")
    expect(causes.last).to_contain_text("re-initialised")
    # The install line is the README's, one line to copy.
    install = page.locator(".st-key-decoded pre", has_text="pip install")
    expect(install).to_have_count(1)
    line = install.inner_text().strip()
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "\n" not in line and f"`{line}`" in readme, line
    # A message from before torch 1.10: TBackward is named as the transposition it is.
    decode_text(page, OLD_TRANSPOSE)
    made = page.locator(".st-key-decoded li", has_text="output 0 of TBackward")
    expect(made).to_contain_text("What made it: TBackward, the output of a transposition (.t()")
    expect(page.locator(".st-key-decoded")).not_to_contain_text("What made it: T,")
