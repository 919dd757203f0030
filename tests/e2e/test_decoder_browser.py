"""The decoder in the browser: a Decode button to press; a pasted
traceback's own file and line named, as plain text; torch's freed-graph
error explained on its own."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from .browsing import expect, open_page, rerun_after

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
def test_pressing_decode_names_the_pasted_tracebacks_own_line(browser, server, viewport, tmp_path):
    from .browsing import browser_page

    script = tmp_path / "gan_**train**.py"     # a file name with markup in it stays text
    script.write_text(FREED)
    text = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120).stderr
    with browser_page(browser, viewport=viewport) as page:
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
