"""The fix gallery in the browser: a tab of its own beside *Inside the
failure*, so the lesson's script and views are drawn without waiting for
every fix to train; opened, it trains them and shows torch's outcomes and
the verdicts."""

from __future__ import annotations

import pytest

from fitlab import Config
from fitlab.failure.fixes import DETACH, VARIANTS, fix_gallery, references
from tools.browsing import expect, open_page, open_tab
from ui.tabs.failure.gallery import VARIANT_NAMES

pytestmark = pytest.mark.browser

GALLERY = ".st-key-fix_gallery"


def test_the_lesson_is_whole_without_the_gallery_which_trains_when_its_tab_opens(page, server):
    open_page(page, f"{server}/?detach=false&lr=0.07&width=6")
    expect(page.locator(".st-key-marked_script pre [data-mark]").first).to_be_visible()
    expect(page.locator(".st-key-vivid_example table")).to_be_visible()
    expect(page.locator(GALLERY)).to_have_count(0)   # nothing of it drawn, nothing of it trained
    open_tab(page, "Fix gallery", page.locator(f"{GALLERY} tbody tr").first)
    rows = page.locator(f"{GALLERY} tbody tr")
    expect(rows).to_have_count(len(VARIANTS))
    outcomes = fix_gallery(Config(detach=False, lr=0.07, width=6))
    blog, detached = references(outcomes)
    last = detached.history.iloc[-1]
    row = rows.filter(has_text=VARIANT_NAMES[DETACH.key])
    expect(row).to_contain_text("✓ fixes it")
    expect(row).to_contain_text(f"final train MSE {last.train_loss:.6g}")
    expect(rows.filter(has_text="as the blog wrote it")).to_contain_text(
        f"✗ fails at epoch {blog.error.epoch}, batch {blog.error.batch}")
    expect(page.locator(".st-key-marked_script")).to_have_count(0)   # the lesson's tab is closed
    first_screen = page.locator('[data-testid="stAlert"]', has_text="loss.backward()")
    expect(first_screen).to_have_count(1)   # stays above the tabs


def test_the_gallery_reads_on_a_projector_code_in_the_code_font_verdicts_coloured_and_short(page, server):
    """At 1400×1000: each code change in a monospace font, each verdict in at
    most eight lines (12 to 15 before), ✓ green, ✗ red, ⚠ amber."""
    open_page(page, f"{server}/?detach=false&epochs=20")
    open_tab(page, "Fix gallery", page.locator(f"{GALLERY} tbody tr").first)
    cells = page.locator(f"{GALLERY} tbody tr").evaluate_all("""rows => rows.map(r => {
        const [code, verdict] = [r.cells[1], r.cells[3]];
        const style = getComputedStyle(verdict), words = document.createRange();
        words.selectNodeContents(verdict);   // the text's own height, not the row's
        return {font: getComputedStyle(code).fontFamily, text: verdict.innerText.trim(),
                lines: words.getBoundingClientRect().height / parseFloat(style.lineHeight),
                colour: style.color};
    })""")
    assert len(cells) == len(VARIANTS)
    colours = {}
    for cell in cells:
        assert "monospace" in cell["font"] or "Code" in cell["font"], cell
        assert cell["lines"] <= 8, cell
        colours.setdefault(cell["text"][:1], set()).add(cell["colour"])
    assert {"✓", "✗"} <= set(colours)
    assert all(len(c) == 1 for c in colours.values())          # one colour per mark
    assert len({next(iter(c)) for c in colours.values()}) == len(colours)   # each mark its own
    assert "rgb(49, 51, 63)" not in {next(iter(c)) for c in colours.values()}   # not the body text's
