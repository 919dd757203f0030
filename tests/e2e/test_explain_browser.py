"""The blog's script and the decoder in a real browser at phone width, served by
`streamlit run` (the worker process is spawned from the real server)."""

from __future__ import annotations

import pytest

from fitlab import Config, train
from tools.browsing import expect, open_page, wait_idle


@pytest.fixture
def phone(pages):
    # Longer than the suite's default: the lesson's first page spawns the worker.
    with pages.page(timeout_ms=120_000, viewport={"width": 390, "height": 844}) as page:
        yield page


def test_lesson_shows_the_marked_script_at_phone_width(phone, server):
    open_page(phone, f"{server}/?detach=false&epochs=3")
    code = phone.locator(".st-key-marked_script pre", has_text="# The blog's script")
    expect(code).to_have_count(1)
    for mark in ("saved here", "written here", "backward fails here"):
        expect(code).to_contain_text(mark)
    assert phone.locator('[data-testid="stException"]').count() == 0


def test_decoder_answers_a_pasted_message_at_phone_width(phone, server):
    open_page(phone, server)
    phone.get_by_text("Decode your own error message").click()
    box = phone.get_by_label("Paste a \"modified by an inplace operation\" error", exact=False)
    box.fill(train(Config(detach=False)).error.message)
    box.press("Control+Enter")
    wait_idle(phone)
    expect(phone.get_by_text("What made it:", exact=False)).to_be_visible()
    expect(phone.get_by_text("python -m fitlab.explain your_script.py")).to_be_visible()
