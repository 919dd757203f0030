"""The page under a full server: a new run waits in line and says so, a
cached one does not wait, and a full line is answered in words."""

from __future__ import annotations

import threading
import time

import streamlit as st
from streamlit.testing.v1 import AppTest

import ui.state
from tests.lib.serving.gates import assert_idle, hold_every_slot
from tests.page.helpers import APP, loss_charts

PATIENCE = 60


def fresh_page(**query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=PATIENCE)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def test_a_new_run_waits_in_line_and_says_its_place(monkeypatch):
    st.cache_data.clear()
    st.cache_resource.clear()
    told = []
    real = ui.state.waiting_in_line
    monkeypatch.setattr(ui.state, "waiting_in_line", lambda *a: told.append(real(*a)) or told[-1])
    cached = fresh_page()
    cached.run()  # the default run, now in the run cache
    gate = ui.state.job_gate()
    release, holders = hold_every_slot(gate)
    try:
        # A cached run needs no slot: it is drawn while the server is full.
        cached.run()
        assert not cached.exception and len(loss_charts(cached)) == 1 and not told
        page = fresh_page(width="9")
        running = threading.Thread(target=page.run, daemon=True)
        running.start()
        deadline = time.monotonic() + PATIENCE
        while not told:  # told its place: in line
            assert time.monotonic() < deadline and running.is_alive()
            time.sleep(0.01)
        assert told[0] == ("Waiting to start the training: the server runs 2 at once, and 2 other "
                           "jobs are before yours (2 running, 0 waiting ahead of you).")
    finally:
        release.set()
    running.join(PATIENCE)
    for thread in holders:
        thread.join(PATIENCE)
    assert not page.exception and len(loss_charts(page)) == 1
    assert not [i for i in page.info if "Waiting to start" in i.value]  # the note is gone
    assert_idle(gate)


def test_a_full_line_is_answered_in_words(monkeypatch):
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setattr(ui.state, "HEAVY_WAITING", 0)
    release, holders = hold_every_slot(ui.state.job_gate())
    try:
        page = fresh_page(width="9")
        page.run()
    finally:
        release.set()
        for thread in holders:
            thread.join(PATIENCE)
    assert not page.exception and not loss_charts(page)
    assert any("too busy to start the training" in w.value for w in page.warning)
