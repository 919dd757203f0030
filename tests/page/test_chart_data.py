"""The page's charts carry the run's own data. A chart drawn through
ui.charts.draw has its data made into Arrow once and sent as it is on every
later view; the watch view's pictures keep their tables, converted as they
are drawn (ui/charts.py says why)."""

from __future__ import annotations

import json
import types
from collections import Counter

import pandas as pd
import pyarrow as pa
import pytest
import streamlit as st
import streamlit.dataframe_util as dataframe_util
import streamlit.elements.vega_charts as vega_charts
from streamlit.testing.v1 import AppTest

import ui.charts as charts
from fitlab import Config, train
from fitlab.figures.charts import loss_chart
from fitlab.figures.watch_charts import watch_panels
from tests.page.helpers import open_tab, run_page

# Non-default settings: every number below depends on them.
QUERY = {"width": "6", "epochs": "12", "lr": "0.03"}
CONFIG = Config(width=6, epochs=12, lr=0.03)


@pytest.fixture
def conversions(monkeypatch):
    """Arrow conversions of chart data, by who made them: this page ("page")
    or Streamlit while drawing a chart ("streamlit")."""
    st.cache_data.clear()
    st.cache_resource.clear()
    charts.forget()
    calls = Counter()

    def counted(who, real):
        def convert(data, *args, **kwargs):
            calls[who] += 1
            return real(data, *args, **kwargs)
        return convert

    real = dataframe_util.convert_anything_to_arrow_bytes
    monkeypatch.setattr(charts, "convert_anything_to_arrow_bytes", counted("page", real))
    streamlits = types.SimpleNamespace(**vars(dataframe_util))
    streamlits.convert_anything_to_arrow_bytes = counted("streamlit", real)
    monkeypatch.setattr(vega_charts, "dataframe_util", streamlits)
    yield calls
    charts.forget()


def view() -> AppTest:
    """The page with its Watch it learn tab open: the loss chart (drawn on
    every tab) and the six pictures."""
    at = open_tab(run_page(120, **QUERY), "Watch it learn")
    assert not at.exception
    return at


def sent(at: AppTest) -> dict[str, pd.DataFrame]:
    """Every data set the page's charts send, by name, as the browser reads it."""
    return {d.name: pa.ipc.open_stream(d.data.data).read_pandas()
            for chart in at.get("vega_lite_chart") for d in chart.proto.datasets}


def watch_datasets(at: AppTest) -> int:
    """How many data sets the watch view's pictures (the charts with an epoch input) send."""
    return sum(len(c.proto.datasets) for c in at.get("vega_lite_chart")
               if any(p.get("name") == "epoch" for p in json.loads(c.proto.spec).get("params", [])))


def test_the_loss_charts_data_is_converted_once_the_pictures_as_they_are_drawn(conversions):
    first = view()
    made, drawn = conversions["page"], conversions["streamlit"]
    # The pictures' data is converted as drawn: the first screen's on the Training tab the page
    # opens on, then Watch it learn's.
    glance = drawn - watch_datasets(first)
    assert made >= 1 and watch_datasets(first) > 0
    first.run()
    later = view()
    assert conversions["page"] == made   # a rerun and another session: the loss chart's data as it was
    assert conversions["streamlit"] == drawn + watch_datasets(first) + glance + watch_datasets(later)
    assert glance == watch_datasets(run_page(120, **QUERY)) > 0
    assert sent(later).keys() == sent(first).keys()


def test_the_charts_send_the_runs_own_numbers(conversions):
    at = view()
    data = sent(at)
    run = train(CONFIG)
    for panel in watch_panels(run).values():
        for name, table in panel["datasets"].items():
            pd.testing.assert_frame_equal(data[name], table.reset_index(drop=True), check_dtype=False)
    losses = loss_chart(run.history, True, run.baseline, run.diverged_at).to_dict()["datasets"]
    for name, rows in losses.items():
        pd.testing.assert_frame_equal(data[name], pd.DataFrame(rows), check_dtype=False)
    pictures = {name for panel in watch_panels(run).values() for name in panel["datasets"]}
    assert data.keys() == losses.keys() | pictures   # nothing else, nothing left out
