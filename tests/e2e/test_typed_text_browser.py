"""Markup typed into the sweep's value box, in Chromium: the page's error
shows it as plain text, with no image, link or formatting, and the browser
fetches nothing from the hosts it names."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tools.browsing import expect, open_page, open_tab, rerun_after

pytestmark = pytest.mark.browser

TYPED = ("0.01, ![i](http://127.0.0.1:9/i.png) **bold** [link](http://127.0.0.1:9/x) "
         "<img src=http://127.0.0.1:9/j.png> :red[x]")


def test_markup_typed_in_the_sweep_box_renders_as_text(fresh_page, server):
    page = fresh_page  # it listens to the tab's requests
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    open_page(page, server)
    open_tab(page, "Sweep", page.get_by_label("lr values"))
    box = page.get_by_label("lr values")
    box.fill(TYPED)
    rerun_after(page, lambda: box.press("Enter"))
    rerun_after(page, lambda: page.get_by_role("button", name="Run the sweep").click())
    error = page.locator('[data-testid="stAlert"]', has_text="This sweep cannot run")
    expect(error).to_have_count(1)
    reason = page.locator('[data-testid="stText"]', has_text="lr values")
    expect(reason).to_contain_text("![i](http://127.0.0.1:9/i.png) **bold** [link](http://127.0.0.1:9/x)")
    main = page.locator('[data-testid="stMain"]')
    assert main.locator('img[src*="127.0.0.1:9"], a[href*="127.0.0.1:9"]').count() == 0
    assert reason.locator("img, a, strong, em, code").count() == 0
    assert not [url for url in requested if urlsplit(url).netloc == "127.0.0.1:9"]
    assert page.locator('[data-testid="stException"]').count() == 0
