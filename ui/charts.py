"""Drawing Altair charts without rebuilding them on every rerun.

Building an Altair chart and validating its spec is slow next to a rerun, and every
rerun of the page draws several. A chart drawn from one run with one set of
options never changes, so its spec is built once and drawn as Vega-Lite.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import altair as alt
import streamlit as st

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
    already made a dict), memoised on (build, key)."""
    memo_key = (build.__module__, build.__qualname__, key)
    with _lock:
        found = _specs.get(memo_key)
        if found is not None:
            _specs.move_to_end(memo_key)
            return found
    built = build(*args)
    if not isinstance(built, dict):
        built = built.to_dict()
    with _lock:
        _specs[memo_key] = built
        while len(_specs) > MAX_SPECS:
            _specs.popitem(last=False)
    return built
