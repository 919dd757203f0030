"""Screens a person uses, checked by what the browser drew: the sweep, the
controls' steps, and the page at phone size (Compare runs with a full run
log: test_full_run_log.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tools.browsing import expect, open_page, open_tab, rerun_after

CELLS = '.st-key-sweep_heatmap svg.marks g.mark-rect.role-mark path'


def swept(page, server):
    """The page with its default sweep run: the Sweep tab's panel and the heatmap's cells."""
    open_page(page, server)
    panel = page.get_by_role("tabpanel", name="Sweep")
    open_tab(page, "Sweep", panel.get_by_role("button", name="Run the sweep"))
    rerun_after(page, lambda: panel.get_by_role("button", name="Run the sweep").click())
    cells = page.locator(CELLS)
    expect(cells).to_have_count(20)   # 5 lr × 4 seeds
    return panel, cells


def test_clicking_a_sweep_cell_opens_it_as_the_current_run(page, server):
    panel, cells = swept(page, server)
    # The heatmap's x labels are upright: the label text is not rotated.
    angles = page.locator('.st-key-sweep_heatmap svg.marks .role-axis-label text').evaluate_all(
        "(texts) => texts.map((t) => t.getAttribute('transform') || '')")
    assert not any("rotate" in a for a in angles), angles
    # Seeds are drawn top down 3, 2, 1, 0 and lr across 0.001 … 0.1: the
    # top cell of the fourth column is lr=0.03, seed=3.
    boxes = cells.evaluate_all("(paths) => paths.map((p) => p.getBoundingClientRect().toJSON())")
    top = min(b["y"] for b in boxes)
    lefts = sorted({round(b["x"]) for b in boxes})
    target = next(i for i, b in enumerate(boxes) if b["y"] == top and round(b["x"]) == lefts[3])
    # The finished sweep is scrolled into view: the whole heatmap on the screen.
    grid = page.locator(".st-key-sweep_heatmap svg.marks").bounding_box()
    assert grid["y"] >= 0 and grid["y"] + grid["height"] <= page.viewport_size["height"], grid
    rerun_after(page, lambda: cells.nth(target).click())
    expect(page.get_by_role("tab", name="Training")).to_have_attribute("aria-selected", "true")
    # lr 0.03 lies between the slider's stops: a stop of its own while in use
    expect(page.get_by_role("slider", name="Learning rate")).to_have_attribute("aria-valuetext", "0.03")
    expect(page).to_have_url(re.compile(r"[?&]seed=3\b"))
    # What the click loaded, in one line: on the tab it opened, and beside the heatmap.
    expect(page.get_by_role("tabpanel", name="Training").get_by_text(
        "Loaded from the sweep: lr=0.03, seed=3;", exact=False)).to_be_visible()
    open_tab(page, "Sweep", panel.get_by_role("button", name="Run the sweep"))
    expect(panel.get_by_text("Loaded as the current run: lr=0.03, seed=3", exact=False)).to_be_visible()


def test_the_controls_step_where_it_matters(page, server):
    open_page(page, server)
    # The learning rate: one key press is one stop of 1, 2, 5 × 10^k.
    lr = page.get_by_role("slider", name="Learning rate")
    rerun_after(page, lambda: (lr.focus(), lr.press("ArrowRight")))
    expect(lr).to_have_attribute("aria-valuetext", "0.02")
    rerun_after(page, lambda: lr.press("ArrowRight"))
    expect(lr).to_have_attribute("aria-valuetext", "0.05")
    # The width slider: every width to 16, then one key press from 16 is 24.
    thumb = page.get_by_role("slider", name="Hidden width")
    rerun_after(page, lambda: (thumb.focus(), *[thumb.press("ArrowRight") for _ in range(11)]))
    expect(thumb).to_have_attribute("aria-valuetext", "16")
    rerun_after(page, lambda: thumb.press("ArrowRight"))
    expect(page).to_have_url(re.compile(r"[?&]width=24\b"))


PHONE = {"width": 390, "height": 844}


@pytest.fixture
def phone(pages):
    """A page the size of a phone's screen, touch and all."""
    with pages.page(viewport=PHONE, is_mobile=True, has_touch=True) as page:
        yield page


def within_the_screen(locator) -> None:
    """Every element `locator` finds lies inside the phone's width."""
    locator.first.wait_for()
    edges = locator.evaluate_all(
        "(els) => els.map((e) => { const r = e.getBoundingClientRect(); return [r.left, r.right]; })")
    assert edges and all(left >= 0 and right <= PHONE["width"] for left, right in edges), edges


def test_the_page_fits_a_phone(phone, server):
    open_page(phone, server)
    # Nothing scrolls sideways: not the page, not the tab bar (it wraps).
    phone.wait_for_function("""() => {
        const bar = document.querySelector('[role="tablist"]');
        return bar && bar.scrollWidth <= bar.clientWidth; }""")
    assert phone.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    within_the_screen(phone.get_by_role("tab"))
    expect(phone.get_by_role("tab", name="Sweep")).to_be_visible()
    # The intro's control is in the closed sidebar: it says how to open it,
    # and links the lesson itself.
    expect(phone.get_by_test_id("stExpandSidebarButton")).to_be_visible()
    lesson = phone.get_by_role("link", name="the lesson")
    expect(lesson).to_be_visible()
    open_page(phone, f"{server}/{lesson.get_attribute('href')}")
    expect(phone.locator('[data-testid="stAlert"]', has_text="loss.backward()")).to_have_count(1)


def test_the_lesson_reads_on_a_phone(phone, server):
    open_page(phone, f"{server}/?detach=false")
    # The fix gallery, in its tab: each variant a block, its outcome and verdict on screen.
    cells = phone.locator(".st-key-fix_gallery td")
    open_tab(phone, "Fix gallery", cells.first)
    expect(cells.first).to_be_visible()
    phone.wait_for_function("""() => [...document.querySelectorAll('.st-key-fix_gallery td')]
        .every((td) => getComputedStyle(td).display === 'block')""")
    within_the_screen(cells)
    expect(phone.locator(".st-key-fix_gallery tr", has_text="RuntimeError").first).to_be_visible()
    # Torch's long messages wrap instead of running off in one line.
    phone.get_by_text("Torch's messages in full").click()
    message = phone.locator('[data-testid="stExpander"]', has_text="Torch's messages in full").locator("pre").first
    expect(message).to_contain_text("one of the variables needed for gradient computation")
    assert message.evaluate("(p) => p.scrollWidth <= p.clientWidth")


def test_the_parameter_matrices_show_every_column_at_1400_px(page, server):
    from fitlab import Config, train
    from fitlab.weights import parameter_matrix
    from tools.browsing import TABLE

    columns = ["", *parameter_matrix(train(Config()).teacher_params).columns]   # the index's header is blank
    assert len(columns) == 12   # 10 inputs and the bias, after the row names
    open_page(page, server)
    tables = page.locator(TABLE)
    expect(tables).to_have_count(2)
    for i in range(2):
        table = tables.nth(i)
        table.scroll_into_view_if_needed()
        # The grid's accessible table holds the columns it draws: all of them, none scrolled away.
        expect(table.locator('table[role="grid"] thead th')).to_have_count(len(columns))
        assert table.locator('table[role="grid"] thead th').all_inner_texts() == columns
        assert table.evaluate("(t) => { const s = t.querySelector('.dvn-scroller'); "
                              "return s.scrollWidth <= s.clientWidth && s.scrollHeight <= s.clientHeight; }")


def test_a_tables_toolbar_leaves_its_caption_readable_on_a_phone(phone, server):
    from tools.browsing import TABLE

    open_page(phone, server)
    tables = phone.locator(TABLE)
    expect(tables).to_have_count(2)
    captions = phone.locator('.st-key-parameter_tables [data-testid="stCaptionContainer"] p')
    for i in range(2):
        tables.nth(i).scroll_into_view_if_needed()
        tables.nth(i).tap(position={"x": 100, "y": 60})
        toolbar = tables.nth(i).locator('[data-testid="stElementToolbar"]')
        phone.wait_for_function("(t) => getComputedStyle(t).opacity === '1'", arg=toolbar.element_handle())
        bar, words = toolbar.bounding_box(), captions.nth(i).bounding_box()
        assert bar["y"] >= words["y"] + words["height"], (bar, words)   # under the caption's words, not on them


def boxes(page, selector: str) -> list[dict]:
    return page.locator(selector).evaluate_all("(els) => els.map((e) => e.getBoundingClientRect().toJSON())")


def at_least_a_fingertip(page, selector: str) -> None:
    """Every element `selector` finds is at least 44 px each way, within a
    second of being asked (the page's style is applied up to about 0.4 s
    after its run has ended, as a person could not yet tap)."""
    try:
        page.wait_for_function("""(s) => { const es = [...document.querySelectorAll(s)];
            return es.length && es.every((e) => { const r = e.getBoundingClientRect();
                return r.width >= 43.5 && r.height >= 43.5; }); }""", arg=selector, timeout=1000)
    except PlaywrightTimeout:
        pass  # the assertion below says what was drawn
    found = boxes(page, selector)
    # 43.5: a box 44 px wide measures 43.99 mid-animation (the sheet slides in)
    assert found and all(b["width"] >= 43.5 and b["height"] >= 43.5 for b in found), (selector, found)


def test_on_a_phone_targets_take_a_finger_and_a_change_shows_its_result(phone, server):
    open_page(phone, server)
    at_least_a_fingertip(phone, '[data-testid="stExpandSidebarButton"]')
    phone.get_by_test_id("stExpandSidebarButton").tap()
    sheet = phone.get_by_test_id("stSidebar")
    expect(sheet).to_have_attribute("data-collapsed", "false")
    expect(phone.get_by_role("slider", name="Hidden width")).to_be_visible()
    for target in ('[data-testid="stSidebar"] [data-testid="stTooltipIcon"] button',   # the help icons
                   '[data-testid="stSidebar"] [data-testid="stSlider"] div:has(> div > input[type="range"])',  # thumbs
                   '[data-testid="stSidebar"] [data-testid="stCheckbox"] label',
                   '[data-testid="stSidebarCollapseButton"] button'):
        at_least_a_fingertip(phone, target)
    # A thumb takes a tap off its drawn dot's centre.
    thumb = boxes(phone, '[data-testid="stSidebar"] [data-testid="stSlider"] div:has(> div > input[type="range"])')[0]
    hit = phone.evaluate("([x, y]) => !!document.elementFromPoint(x, y).closest('[data-testid=\"stSlider\"]')",
                         [thumb["x"] + thumb["width"] / 2 + 18, thumb["y"] + thumb["height"] / 2 + 18])
    assert hit
    # One change in the sheet: the sheet closes and the result is on the screen.
    step_up = phone.locator('[data-testid="stSidebar"] [data-testid="stNumberInput"]',
                            has_text="Batch size").locator('[data-testid="stNumberInputStepUp"]')
    rerun_after(phone, lambda: step_up.tap())
    expect(phone.get_by_role("spinbutton", name="Batch size")).to_have_value("6")
    expect(sheet).to_have_attribute("data-collapsed", "true")
    phone.wait_for_function("""() => { const v = document.querySelector('.st-key-verdict');
        const r = v && v.getBoundingClientRect(); return r && r.top >= 0 && r.bottom <= innerHeight; }""")


def test_on_a_phone_play_shows_a_picture_and_the_player_scrolls_away_with_the_page(phone, server):
    from tools.browsing import open_watch

    open_page(phone, server)
    open_watch(phone)
    at_least_a_fingertip(phone, '.st-key-watch .fitlab-player label:has([data-role="loop"])')
    at_least_a_fingertip(phone, '.st-key-watch .fitlab-player [data-act="play"]')
    play = phone.locator('.st-key-watch .fitlab-player [data-act="play"]')
    play.scroll_into_view_if_needed()
    play.tap()
    expect(play).to_have_text("Pause")
    in_view = """() => { const player = document.querySelector('.st-key-watch .fitlab-player').getBoundingClientRect();
        const pictures = [...document.querySelectorAll('.st-key-watch_pictures [data-testid="stVegaLiteChart"]')]
            .map((p) => p.getBoundingClientRect());
        return player.top >= 0 && pictures.some((p) => p.top >= player.bottom && p.bottom <= innerHeight); }"""
    phone.wait_for_function(in_view)   # a whole picture on the screen, under the player
    # Scrolled further down, the player does not stay (sticky, it took 45% of the height):
    # the screen is the pictures'.
    phone.locator('[data-testid="stMain"]').evaluate("(main) => main.scrollBy(0, 900)")
    phone.wait_for_function("""() => { const player = document.querySelector('.st-key-watch .fitlab-player')
        .getBoundingClientRect();
        const pictures = [...document.querySelectorAll('.st-key-watch_pictures [data-testid="stVegaLiteChart"]')]
            .map((p) => p.getBoundingClientRect());
        const shown = pictures.reduce((sum, p) =>
            sum + Math.max(0, Math.min(p.bottom, innerHeight) - Math.max(p.top, 0)), 0);
        return player.bottom <= 0 && shown >= 0.6 * innerHeight; }""")


def test_the_sweep_heatmap_on_a_phone_has_its_legend_below_and_no_overprinted_labels(phone, server):
    swept(phone, server)
    grid = boxes(phone, CELLS)
    legend = boxes(phone, ".st-key-sweep_heatmap svg.marks g.role-legend")[0]
    chart = boxes(phone, ".st-key-sweep_heatmap svg.marks")[0]
    left, right = min(c["left"] for c in grid), max(c["right"] for c in grid)
    assert legend["top"] >= max(c["bottom"] for c in grid)            # below the grid
    assert right - left >= 0.7 * chart["width"], (left, right, chart)  # the grid keeps the width
    at_least_a_fingertip(phone, CELLS)  # a cell opens its run
    # The labels drawn (opacity not 0) each lie inside a cell and overlap none of the others.
    drawn = phone.locator(".st-key-sweep_heatmap svg.marks g.mark-text.role-mark text").evaluate_all(
        "(ts) => ts.filter((t) => t.getAttribute('opacity') !== '0').map((t) => t.getBoundingClientRect().toJSON())")
    for i, label in enumerate(drawn):
        assert any(c["left"] <= label["left"] and label["right"] <= c["right"] for c in grid), label
        for other in drawn[i + 1:]:
            assert (label["right"] <= other["left"] or other["right"] <= label["left"]
                    or label["bottom"] <= other["top"] or other["bottom"] <= label["top"]), (label, other)
