"""A class on one link: the run's tables and charts are built by the first
view and reused by every later one (tools/bench_views.py prints what that
saves), counted here call by call."""

from __future__ import annotations

import functools
from collections import Counter

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import ui.tabs.training as training
from tests.page.helpers import run_page

QUERY = {"width": "16", "epochs": "20"}  # the first layer's 10 inputs of 16 columns: padded


def counted(calls: Counter, func):
    @functools.wraps(func)  # the same name: the spec memo keys on it
    def wrapper(*args, **kwargs):
        calls[func.__name__] += 1
        return func(*args, **kwargs)
    return wrapper


@pytest.fixture
def fresh_caches():
    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


def view() -> AppTest:
    at = run_page(120, **QUERY)
    assert not at.exception
    return at


def test_views_of_one_run_build_its_tables_and_charts_once(fresh_caches, monkeypatch):
    calls = Counter()
    words = ("verdict_line", "divergence_note", "fit_note", "blog_figure_note", "engine_note")
    for name in ("parameter_matrix", "padding_mask", "loss_chart", *words):
        monkeypatch.setattr(training, name, counted(calls, getattr(training, name)))
    first = view()
    built = dict(calls)
    # teacher, student; one chart; the Training tab's sentences worded once each
    assert built == {"parameter_matrix": 2, "padding_mask": 2, "loss_chart": 1, **dict.fromkeys(words, 1)}
    later = [view() for _ in range(3)]
    assert dict(calls) == built  # three more sessions: nothing built again
    tables = [[d.value.shape for d in at.dataframe] for at in (first, *later)]
    assert all(t == tables[0] for t in tables) and len(tables[0]) == 2
    assert [d.proto for d in later[-1].dataframe] == [d.proto for d in first.dataframe]
