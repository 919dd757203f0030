"""On a phone (390×844) the lesson's annotated script keeps its lines and
their indentation: a long line scrolls sideways instead of wrapping
(issue 44)."""

from __future__ import annotations

import pytest

from tools.browsing import expect, open_page

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
_ROWS = """(script) => {
    const box = script.querySelector('.fitlab-script');
    const rows = [...box.querySelectorAll('[data-line]:not([data-mark])')].map((row) => {
        const code = row.querySelector('code'), words = document.createRange();
        words.selectNodeContents(code);
        return {text: code.textContent, lines: words.getClientRects().length === 0 ? 0
                : Math.round(words.getBoundingClientRect().height / parseFloat(getComputedStyle(code).lineHeight))};
    });
    return {rows, scrolls: box.scrollWidth > box.clientWidth};
}"""


def test_on_a_phone_the_scripts_lines_scroll_sideways_and_keep_their_indentation(pages, server):
    with pages.page(viewport=PHONE) as page:
        open_page(page, f"{server}/?detach=false")
        script = page.locator(".st-key-marked_script")
        expect(script.locator(".fitlab-script")).to_be_visible()  # its HTML drawn, not only its container
        found = script.evaluate(_ROWS)
        assert found["scrolls"]                      # some line is wider than a phone
        long = [r for r in found["rows"] if len(r["text"]) > 45]
        assert long and all(r["lines"] == 1 for r in long), long
        indented = [r for r in found["rows"] if r["text"].startswith("    ")]
        assert indented                               # the indentation is in the drawn text
