"""The fix gallery in the browser: a tab of its own beside *Inside the
failure*, so the lesson's script and views are drawn without waiting for
every fix to train; opened, it trains them and shows torch's outcomes and
the verdicts."""

from __future__ import annotations

import pytest

from fitlab import Config
from fitlab.failure.fixes import DETACH, VARIANTS, fix_gallery, references
from ui.tabs.failure.gallery import VARIANT_NAMES

from .browsing import expect, open_page, open_tab

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
