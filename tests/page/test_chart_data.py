"""The page's charts carry the run's own data. A chart drawn through
ui.charts (the loss chart, the first screen's glance) has its message, its
data made into Arrow, built once and sent as it is on every later view; the
Watch it learn tab's pictures keep their tables, converted as they are drawn
(ui/charts.py says why)."""

from __future__ import annotations

import json
import types

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
    """How many chart data sets Streamlit has converted to Arrow so far: [count]."""
    st.cache_data.clear()
    st.cache_resource.clear()
    charts.forget()
    calls = [0]
    real = dataframe_util.convert_anything_to_arrow_bytes

    def convert(data, *args, **kwargs):
        calls[0] += 1
        return real(data, *args, **kwargs)

    streamlits = types.SimpleNamespace(**vars(dataframe_util))
    streamlits.convert_anything_to_arrow_bytes = convert
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


def test_the_first_screens_charts_are_converted_once_the_pictures_as_they_are_drawn(conversions):
    first = view()
    kept = conversions[0] - watch_datasets(first)  # the loss chart's and the glance's, made once
    assert kept >= 3 and watch_datasets(first) > 0
    first.run()
    later = view()
    # A rerun and another session: the first screen's messages as they were, Watch it learn's drawn anew.
    assert conversions[0] == kept + watch_datasets(first) + watch_datasets(first) + watch_datasets(later)
    before = conversions[0]
    again = run_page(120, **QUERY)  # the Training tab: the loss chart and the glance
    assert not again.exception and len(again.get("vega_lite_chart")) == 3 and conversions[0] == before
    assert sent(later).keys() == sent(first).keys()
    assert [c.proto for c in again.get("vega_lite_chart")] == [c.proto for c in run_page(120, **QUERY).get(
        "vega_lite_chart")]


def test_a_kept_message_is_st_vega_lite_charts():
    at = AppTest.from_function(both_ways).run()
    assert not at.exception
    direct, kept = (c.proto for c in at.get("vega_lite_chart"))
    assert kept == direct and kept.datasets and json.loads(kept.spec)["height"] == 125


def both_ways():
    import pandas as pd
    import streamlit as st

    from ui import charts

    spec = {"datasets": {"rows": pd.DataFrame({"epoch": [0, 1, 2], "loss": [1.0, 0.5, float("nan")]})},
            "data": {"name": "rows"}, "mark": "line", "height": 125,
            "encoding": {"x": {"field": "epoch", "type": "quantitative"},
                         "y": {"field": "loss", "type": "quantitative"}}}
    st.vega_lite_chart(spec, width="stretch")
    charts.kept(("a chart", 1), lambda: spec)


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
