"""Drawing Altair charts without rebuilding them on every rerun.

Building an Altair chart and validating its spec is slow next to a rerun, and every
rerun of the page draws several. A chart drawn from one run with one set of
options never changes, so its spec is built once and drawn as Vega-Lite.

A spec made here keeps its data sets as the Arrow bytes Streamlit sends:
given a table (or Altair's rows), `st.vega_lite_chart` converts it through
pandas to Arrow on every draw; bytes it sends as they are. The watch view's
pictures (ui/tabs/watch.py, a dict of specs) keep their tables: converted
once as well, they reached the browser right behind the loss chart and were
drawn with it, so the loss chart came later (figures in docs/measurements/browser.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import altair as alt
import streamlit as st
from streamlit.dataframe_util import convert_anything_to_arrow_bytes

MAX_SPECS = 256
_specs: OrderedDict[tuple, dict] = OrderedDict()
_lock = threading.Lock()


def draw(build: Callable[..., alt.TopLevelMixin], key: Hashable, *args) -> None:
    """Draw build(*args), full width. `key` must determine the chart (say,
    the run's Config and the chart's options): the spec is built on the first
    draw of (build, key) and reused, by every session, afterwards."""
    st.vega_lite_chart(spec(build, key, *args), width="stretch")


def forget() -> None:
    """Forget every memoised spec (a benchmark's fresh start)."""
    with _lock:
        _specs.clear()


def spec(build: Callable[..., alt.TopLevelMixin | dict], key: Hashable, *args) -> dict:
    """The Vega-Lite spec of build(*args) (an Altair chart, or a spec
    already made a dict), memoised on (build, key), its data sets as Arrow
    bytes (read them with pyarrow.ipc.open_stream)."""
    memo_key = (build.__module__, build.__qualname__, key)
    with _lock:
        found = _specs.get(memo_key)
        if found is not None:
            _specs.move_to_end(memo_key)
            return found
    built = build(*args)
    if not isinstance(built, dict):
        built = built.to_dict()
    built = sendable(built)
    with _lock:
        _specs[memo_key] = built
        while len(_specs) > MAX_SPECS:
            _specs.popitem(last=False)
    return built


def sendable(spec: dict) -> dict:
    """`spec` with its data sets (tables, or Altair's rows) as the Arrow
    bytes Streamlit sends."""
    if "datasets" not in spec:
        return spec
    return {**spec, "datasets": {name: data if isinstance(data, bytes) else convert_anything_to_arrow_bytes(data)
                                 for name, data in spec["datasets"].items()}}
