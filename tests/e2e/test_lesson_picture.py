"""The lesson opens on a picture (issue 44), in the browser: the teacher's
forward pass with the tensor torch names, its version moving at the
re-initialisation and backward stopping there, stepped by buttons with no
rerun, drawn from the replay at these settings, in the first screen of a
projector and a phone, before torch's message, the fix and the words."""

from __future__ import annotations

import pytest

from fitlab import Config, train
from fitlab.explain import decode
from tools.browsing import expect, finished_runs, open_page

pytestmark = pytest.mark.browser

PICTURE = ".st-key-lesson_picture"
DRAWN = f"{PICTURE} svg.marks"
PROJECTOR = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
# The drawn words: each text mark not made transparent, its lines joined by spaces.
_TEXT = """(svg) => [...svg.querySelectorAll('text')]
    .filter((t) => t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0')
    .map((t) => t.querySelectorAll('tspan').length
        ? [...t.querySelectorAll('tspan')].map((s) => s.textContent).join(' ') : t.textContent)
    .join(' | ')"""


def drawn_text(page) -> str:
    """The picture's visible words, each run of spaces one space."""
    return " ".join(page.locator(DRAWN).evaluate(_TEXT).split())


def step_to(page, label: str, words: str) -> str:
    """Press the picture's button `label`, wait until it draws `words`; its words then."""
    page.locator(PICTURE).get_by_label(label).check()
    page.wait_for_function("([svg, words, read]) => eval(read)(document.querySelector(svg)).replace(/\\s+/g, ' ')"
                           ".includes(words)", arg=[DRAWN, words, _TEXT])
    return drawn_text(page)


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["projector", "phone"])
def test_the_lesson_opens_on_the_picture_in_the_first_screen(pages, server, size):
    with pages.page(viewport=size) as page:
        open_page(page, f"{server}/?detach=false")
        picture = page.locator(PICTURE)
        expect(page.locator(DRAWN)).to_be_visible()
        box = picture.bounding_box()
        message = page.locator('.st-key-lesson [data-testid="stAlert"]').bounding_box()
        fix, rule = (page.locator(f".st-key-lesson_{part}").bounding_box() for part in ("fix", "rule"))
        assert box["y"] < message["y"] < fix["y"] < rule["y"]          # picture, message, fix, then words
        assert page.evaluate("() => window.scrollY") == 0
        assert box["y"] + box["height"] <= size["height"], box          # all of it, its buttons too
        assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"]


def test_its_steps_show_the_saved_tensor_its_version_moving_and_backward_stopping(page, server):
    config = Config(detach=False, width=7)
    facts = decode(train(config).error.message)
    shape = str(list(facts.shape))
    assert shape == "[7, 1]"
    open_page(page, f"{server}/?detach=false&width=7")
    expect(page.locator(DRAWN)).to_be_visible()
    runs = finished_runs(page)
    first = drawn_text(page)
    assert f"last.weight.t() {shape} v{facts.expected_version}" in first
    assert "found" not in first
    second = step_to(page, "2 re-init", f"version {facts.expected_version} → {facts.version}")
    assert f"last.weight.t() {shape} v{facts.version} (saved at v{facts.expected_version})" in second
    assert "✗" not in second
    third = step_to(page, "3 backward", f"expected version {facts.expected_version} and found {facts.version}")
    assert "✗" in third
    assert finished_runs(page) == runs      # stepped in the browser: no rerun
