"""What the page tests share: a fresh AppTest of the page, and finding a
chart by what it encodes (the page draws several)."""

import functools
import json
from pathlib import Path

import pyarrow as pa
import streamlit as st
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")


def _scan_components_once() -> None:
    """Each new AppTest has Streamlit (1.67, AppTest._run) scan every installed
    distribution's metadata for custom components (about 440 here): a fresh
    page took 0.59 s to open with that scan, 0.25 s without it. The installed
    packages do not change while the tests run, so the scan's answer is kept.
    On a Streamlit without this function nothing changes but the time."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:
        return
    scan = getattr(manifest_scanner, "scan_component_manifests", None)
    if scan is not None and not hasattr(scan, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(scan)


_scan_components_once()


def open_page(timeout: float = 60, **query) -> AppTest:
    """The page after its first run, with empty caches (they outlive AppTest
    instances) and `query` as the URL's query parameters."""
    st.cache_data.clear()
    st.cache_resource.clear()
    return run_page(timeout, **query)


def run_page(timeout: float = 60, **query) -> AppTest:
    """The page after its first run with `query` as the URL's query
    parameters, on the caches as they are (a later visitor's page)."""
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


def sent_table(dataframe) -> pa.Table:
    """The Arrow table an st.dataframe sends the browser: a missing cell is
    null, a NaN a number."""
    return pa.ipc.open_stream(dataframe.proto.arrow_data.data).read_all()
