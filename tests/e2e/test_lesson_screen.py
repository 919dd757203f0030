"""The lesson's first screen answers in 30 seconds, in the browser: the
fix, then the rule and what it was here, the fix's code above the fold at
1400×1000 (under the picture: test_lesson_picture.py); the blog's script with its marked lines highlighted and
worded; the intro's link to the lesson keeps the settings and the tab."""

from __future__ import annotations

import re

import pytest

from fitlab import Config, train
from fitlab.explain import decode
from fitlab.failure.explained import explained_blog
from tools.browsing import expect, open_page, wait_idle

pytestmark = pytest.mark.browser

LESSON = ".st-key-lesson"
FOLD = 1000   # the page fixture's viewport height


def top(locator) -> float:
    return locator.bounding_box()["y"]


def test_fix_then_rule_then_here_with_the_fixs_code_above_the_fold(page, server):
    config = Config(detach=False, lr=0.1)
    open_page(page, f"{server}/?detach=false&lr=0.1")
    rule, here, fix = (page.locator(f".st-key-lesson_{part}") for part in ("rule", "here", "fix"))
    expect(rule).to_contain_text("in-place")
    expect(rule).to_contain_text("saved for backward")
    facts = decode(train(config).error.message)
    expect(here).to_contain_text(f"{list(facts.shape)}")
    expect(here).to_contain_text(f"version {facts.expected_version}")
    expect(here).to_contain_text(f"version {facts.version}")
    code = fix.locator("pre")
    expect(code).to_contain_text("labels = net(X).detach().reshape((-1, 1))")
    assert top(fix) < top(rule) < top(here)
    # The rule in two sentences; which writes count, behind an expander.
    assert rule.locator('[data-testid="stMarkdown"]').first.inner_text().count(". ") <= 2
    expect(rule.locator('[data-testid="stExpander"]')).to_contain_text("Which writes count")
    box = code.bounding_box()
    assert page.evaluate("() => window.scrollY") == 0 and box["y"] + box["height"] <= FOLD, box
    # The details come after the fix: the first layer, the biases, TBackward0 → AsStrided.
    details = page.locator(".st-key-lesson_details")
    expect(details).to_contain_text("AsStrided")
    assert top(details) > box["y"]


def test_the_scripts_marked_lines_are_highlighted_and_say_saved_written_fails(page, server):
    config = Config(detach=False, lr=0.1)
    open_page(page, f"{server}/?detach=false&lr=0.1")
    marked = explained_blog(config).marks
    script = page.locator(".st-key-marked_script")
    rows = script.locator("[data-mark]")
    expect(rows).to_have_count(len({m.line for m in marked}))
    assert sorted(int(n) for n in rows.evaluate_all("(rs) => rs.map((r) => r.dataset.line)")) == sorted(
        {m.line for m in marked})
    backgrounds = rows.evaluate_all("(rs) => rs.map((r) => getComputedStyle(r).backgroundColor)")
    plain = script.locator("[data-line]:not([data-mark])").first.evaluate("(r) => getComputedStyle(r).backgroundColor")
    assert all(b != plain and b not in ("rgba(0, 0, 0, 0)", "transparent") for b in backgrounds), backgrounds
    text = script.inner_text()
    for word in ("saved", "written", "fails"):
        assert re.search(rf"\b{word}\b", text, re.IGNORECASE), word
    # Not a comment of the script: the words are the page's, beside the code.
    assert "# ←" not in text


def test_the_intros_link_keeps_the_settings_and_the_tab(page, server):
    open_page(page, f"{server}/?lr=0.1&width=7")
    link = page.get_by_role("link", name="the lesson")
    assert link.get_attribute("target") in (None, "_self")
    pages = len(page.context.pages)
    with page.expect_navigation():         # a new page load, at the link's address
        link.click()
    wait_idle(page)
    assert len(page.context.pages) == pages                 # the same tab
    expect(page).to_have_url(re.compile(r"detach=false"))
    expect(page.get_by_role("slider", name="Learning rate")).to_have_attribute("aria-valuetext", "0.1")
    expect(page.get_by_role("slider", name="Hidden width")).to_have_attribute("aria-valuetext", "7")
    expect(page.locator('[data-testid="stAlert"]', has_text="loss.backward()")).to_have_count(1)
    # The lesson is open: the intro does not send the person to untick detach.
    intro = page.locator(".st-key-intro")
    expect(intro).not_to_contain_text("untick")
    expect(intro).to_contain_text("Detach the labels")
