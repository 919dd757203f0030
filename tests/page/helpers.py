"""What the page tests share: a fresh AppTest of the page, and finding a
chart by what it encodes (the page draws several)."""

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import streamlit as st
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


def open_page(timeout: float = 60, **query) -> AppTest:
    """The page after its first run, with empty caches (they outlive AppTest
    instances) and `query` as the URL's query parameters."""
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at


def charts_encoding(at: AppTest, channel: str, field: str) -> list:
    """The page's charts whose `channel` (color, strokeDash, …) encodes `field`."""
    return [c for c in at.get("vega_lite_chart")
            if json.loads(c.proto.spec).get("encoding", {}).get(channel, {}).get("field") == field]


def loss_charts(at: AppTest) -> list:
    """The current run's own loss chart (colour by split, one line style), if drawn."""
    return [c for c in charts_encoding(at, "color", "split")
            if "strokeDash" not in json.loads(c.proto.spec)["encoding"]]


def open_tab(at: AppTest, label: str, key: str = "view") -> AppTest:
    """Switch the page's tabs (`key`) to `label` and rerun, as a click does:
    a tab's charts are drawn only while it is open."""
    at.session_state[key] = label
    return at.run()


def shown_values(dataframe) -> pd.DataFrame:
    """The cells of a styled st.dataframe as the browser shows them (text)."""
    styler = dataframe.proto.arrow_data.styler
    return pa.ipc.open_stream(styler.display_values).read_all().to_pandas()
