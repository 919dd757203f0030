"""fitlab in a real browser: render, the lesson, widths, the CSV, share links.

Every wait is for the app itself: the stApp element's script-run state
(`data-test-script-state`) and Streamlit's status widget, never a fixed sleep.
"""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

import pandas as pd
import pytest

from fitlab import Config, train
from tools.browsing import (
    CHART,
    DRAWN_CHART,
    TABLE,
    browser_page,
    click_detach,
    expect,
    open_page,
    rerun_after,
    timed_rerun,
    toggle_detach,
    wait_idle,
)

from .timings import record


def expect_table_rows(page, rows: int) -> None:
    """Both parameter tables show `rows` rows (from the grids' ARIA row count,
    which includes the header)."""
    grids = page.locator(f'{TABLE} table[role="grid"]')
    expect(grids).to_have_count(2)
    for i in range(2):
        expect(grids.nth(i)).to_have_attribute("aria-rowcount", str(rows + 1))


def expect_final_train_mse(page, config: Config) -> None:
    """The page's final train MSE is train(config)'s, as the page formats it."""
    metric = page.locator('[data-testid="stMetric"]', has_text="Final train MSE")
    expect(metric.locator('[data-testid="stMetricValue"]')).to_have_text(
        f"{train(config).history.train_loss.iloc[-1]:.4g}")


def expected_rows(config: Config) -> int:
    """Rows of a parameter matrix: one per output unit of each distinct layer."""
    w, uses = config.width, config.shared_repeats
    copies = (1 if config.tied else uses) if uses else 0
    return w + copies * w + 1


def test_default_page_renders_chart_and_both_tables(fresh_page, server):
    page = fresh_page  # a first visit, timed: nothing cached in the browser
    start = time.perf_counter()
    page.goto(server)
    page.wait_for_selector(DRAWN_CHART)
    record("fresh server: first page to first chart", time.perf_counter() - start)
    wait_idle(page)
    record("fresh server: first page to the end of its run", time.perf_counter() - start)
    expect(page.locator(CHART)).to_have_count(1)
    expect(page.locator(TABLE)).to_have_count(2)
    expect_table_rows(page, expected_rows(Config()))
    expect_final_train_mse(page, Config())
    assert page.locator('[data-testid="stException"]').count() == 0


def test_detach_off_shows_torchs_error_then_back_shows_the_chart(page, server):
    open_page(page, server)
    toggle_detach(page)
    alert = page.locator('[data-testid="stAlert"]', has_text="loss.backward()")
    expect(alert).to_contain_text("[torch.FloatTensor [5, 1]], which is output 0 of AsStrided, "
                                  "is at version 2; expected version 1 instead")
    expect(alert).to_contain_text(train(Config(detach=False)).error.message.splitlines()[0])
    expect(page.locator(CHART)).to_have_count(0)
    drawn, ended = timed_rerun(page, lambda: click_detach(page))
    record("cached config: toggle detach back on to its chart", drawn)
    record("cached config: toggle detach back on to the end of its run", ended)
    expect(page.locator(CHART)).to_have_count(1)
    expect(page.locator('[data-testid="stAlert"]', has_text="loss.backward()")).to_have_count(0)
    expect(page).not_to_have_url(re.compile("detach"))  # back at the default: a clean URL


def test_changing_width_updates_the_tables_and_the_url(page, server):
    open_page(page, server)
    page.wait_for_selector(DRAWN_CHART)  # as a person does: see the chart, then move the slider
    thumb = page.locator('[data-testid="stSidebar"] input[type="range"][aria-label="Hidden width"]')
    drawn, ended = timed_rerun(page, lambda: (thumb.focus(), thumb.press("ArrowRight")))
    record("new default-size config (width 6): to its chart", drawn)
    record("new default-size config (width 6): to the end of its run", ended)
    expect_table_rows(page, expected_rows(Config(width=6)))
    expect(page).to_have_url(re.compile(r"[?&]width=6\b"))


def test_loss_csv_downloads_and_matches_train(page, server, tmp_path):
    open_page(page, server)
    with page.expect_download() as download:
        page.locator('.st-key-download_history button').click()
    path = tmp_path / "history.csv"
    download.value.save_as(path)
    table = pd.read_csv(path)
    history = train(Config()).history
    assert list(table.columns[:3]) == ["epoch", "train_loss", "test_loss"]
    assert table.epoch.tolist() == history.epoch.tolist()
    for column in ("train_loss", "test_loss"):
        assert table[column].tolist() == pytest.approx(history[column].tolist(), rel=1e-12)


def test_a_share_link_opens_the_same_run(page, browser, server):
    config = Config(width=7, lr=0.05, seed=3, epochs=40)
    open_page(page, f"{server}/?width=7&lr=0.05&seed=3&epochs=40")
    expect_final_train_mse(page, config)
    expect_table_rows(page, expected_rows(config))
    # The URL the page shows is itself the link: a second visitor sees the same run.
    other = browser.new_context().new_page()
    try:
        open_page(other, page.url)
        expect_final_train_mse(other, config)
    finally:
        other.context.close()


URL_WARNING = ".st-key-url_warning"


def test_garbage_in_the_url_warns_and_the_page_works(page, server):
    open_page(page, f"{server}/?width=abc&lr=-1&colour=red&seed=3")
    warning = page.locator(URL_WARNING)
    expect(warning.locator('[data-testid="stAlert"]')).to_contain_text("Some of this link was ignored")
    for part in ("width=abc", "using the default, 5", "lr=-1", "colour=red"):
        expect(warning).to_contain_text(part)
    expect(page.locator(CHART)).to_have_count(1)
    expect(page.locator(TABLE)).to_have_count(2)
    assert page.locator('[data-testid="stException"]').count() == 0
    # The address bar is the link to the run on screen again.
    expect(page).to_have_url(f"{server}/?seed=3")


# The payloads: a fake error with a phishing link, an image, a heading.
HOSTILE = ("/?width=%60%0A%0A---%0A%0A%2A%2ARuntimeError%3A%20your%20session%20expired.%20"
           "%5BLog%20in%20again%5D%28https%3A//evil.example/login%29%2A%2A%0A%0A%60"
           "&lr=%21%5Bpix%5D%28http%3A//127.0.0.1%3A9/pix.png%29"
           "&x%0A%23%20You%20have%20been%20hacked=1")


@pytest.mark.parametrize("viewport", [{"width": 1400, "height": 1000}, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])
def test_text_from_the_url_is_inert_and_seen_on_a_phone(browser, server, viewport):
    with browser_page(browser, viewport=viewport) as page:
        requested = []
        page.on("request", lambda request: requested.append(request.url))
        open_page(page, server + HOSTILE)
        warning = page.locator(URL_WARNING)
        expect(warning).to_be_visible()  # in the main area: no sidebar to open first
        expect(warning).to_contain_text("**RuntimeError: your session expired. [Log in")
        expect(warning).to_contain_text("![pix](http://127.0.0.1:9/pix.png)")
        expect(warning).to_contain_text("x\\n# You have been hacked=1")
        assert warning.locator("a, img, h1, h2, h3, h4, h5, h6, hr").count() == 0
        # The visitor's text is plain text: no markup at all (the headline's bold is the page's).
        assert warning.locator('[data-testid="stText"] :is(strong, em, code, p, li)').count() == 0
        assert not [url for url in requested if urlsplit(url).netloc in ("127.0.0.1:9", "evil.example")]
        assert page.locator('[data-testid="stException"]').count() == 0
        expect(page).to_have_url(f"{server}/")  # nothing of it was a setting


def test_a_diverging_run_says_so_and_charts_the_finite_part(page, server):
    open_page(page, f"{server}/?lr=5&shared_repeats=8")
    expect(page.locator('[data-testid="stAlert"]', has_text="diverged at epoch 2")).to_have_count(1)
    expect(page.locator(CHART)).to_have_count(1)
    expect(page.locator(TABLE)).to_have_count(2)
    rerun_after(page, lambda: page.locator(".st-key-log_scale").get_by_text("Log scale").click())
    expect(page.locator(CHART)).to_have_count(1)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_diverged_page_draws_epoch_0_and_marks_the_divergence(page, server):
    open_page(page, f"{server}/?width=16&lr=2")
    expect(page.locator('[data-testid="stAlert"]', has_text="diverged at epoch 1")).to_have_count(1)
    page.wait_for_selector(DRAWN_CHART)
    chart = page.locator(CHART)
    # Vega's own drawing: the two epoch-0 points, the constant's two rules and the red one.
    points = chart.locator("g.mark-symbol.role-mark path")
    expect(points).to_have_count(2)
    assert points.evaluate_all("ps => ps.map(p => p.getAttribute('opacity') ?? '1')") == ["1", "1"]  # seen
    expect(chart.locator("g.mark-rule.role-mark line")).to_have_count(3)
    expect(chart.locator("g.mark-text.role-mark text", has_text="diverged at epoch 1")).to_have_count(1)
    expect(page.get_by_text("per-batch means")).to_have_count(0)  # the blog's figure is NaN: no sentence
    expect(page.locator('[data-testid="stMetric"]', has_text="Test R²")
           .locator('[data-testid="stMetricValue"]')).to_have_text("n/a")
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_history_csv_is_named_after_its_settings(page, server):
    open_page(page, f"{server}/?width=8&lr=0.02")
    with page.expect_download() as download:
        page.locator('.st-key-download_history button').click()
    assert download.value.suggested_filename == "fitlab-history-width8-lr0.02.csv"
