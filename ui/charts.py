"""Drawing Altair charts without rebuilding them on every rerun.

Building an Altair chart and validating its spec is slow next to a rerun, and every
rerun of the page draws several. A chart drawn from one run with one set of
options never changes, so its message (Streamlit's VegaLiteChart, made as
`st.vega_lite_chart` makes it) is built on its first draw and sent again as
it is: given a table, `st.vega_lite_chart` converts it through pandas to
Arrow and serialises and rewrites the spec's JSON on every draw: for the
first screen's pictures (the loss chart, the watch view's glance) about a
tenth of a cached page run's server CPU (figures in
docs/measurements/robustness.md). The Watch it learn tab's six pictures (a
dict of specs, `spec`) keep their tables: converted once as well, they
reached the browser right behind the loss chart and were drawn with it, so
the loss chart came later (figures in docs/measurements/browser.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable

import altair as alt
import streamlit as st
from streamlit.elements.lib.layout_utils import LayoutConfig
from streamlit.elements.vega_charts import _marshall_chart_data, _prepare_vega_lite_spec, _stabilize_vega_json_spec
from streamlit.proto.VegaLiteChart_pb2 import VegaLiteChart

from fitlab.serving.memo import Memo
from ui import state

# Server-wide, each bounded by count.
MAX_SPECS = 256
_specs = Memo(max_entries=MAX_SPECS)  # of dict
_messages = Memo(max_entries=MAX_SPECS)  # of VegaLiteChart


def draw(build: Callable[..., alt.TopLevelMixin], key: Hashable, *args) -> None:
    """Draw build(*args), full width. `key` must determine the chart (say,
    the run's Config and the chart's options): its message is built on the
    first draw of (build, key) and reused, by every session, afterwards."""
    kept((build.__module__, build.__qualname__, key), lambda: _as_dict(build(*args)))


def kept(key: Hashable, make: Callable[[], dict]) -> None:
    """st.vega_lite_chart(make(), width="stretch"), its message built on the
    first draw of `key` and sent as it is afterwards: `key` must determine
    the spec."""
    found = _messages.get(key)
    if found is None:
        state.let_others_draw()
        found = message(make())
        _messages.put(key, found)
    # The message is copied into the page's delta: the kept one stays as built.
    st._main._enqueue("vega_lite_chart", found, layout_config=LayoutConfig(width="stretch", height="content"))


def message(spec: dict) -> VegaLiteChart:
    """The VegaLiteChart proto st.vega_lite_chart(spec, width="stretch")
    sends (no selections, Streamlit's theme), read only."""
    proto = VegaLiteChart()
    spec = _prepare_vega_lite_spec(spec, True)
    _marshall_chart_data(proto, spec, None)
    proto.spec = _stabilize_vega_json_spec(json.dumps(spec))
    proto.theme = "streamlit"
    return proto


def _as_dict(chart: alt.TopLevelMixin | dict) -> dict:
    return chart if isinstance(chart, dict) else chart.to_dict()


def forget() -> None:
    """Forget every memoised spec and message (a benchmark's fresh start)."""
    _specs.clear()
    _messages.clear()


def spec(build: Callable[..., alt.TopLevelMixin | dict], key: Hashable, *args) -> dict:
    """The Vega-Lite spec of build(*args) (an Altair chart, or a spec
    already made a dict, its data sets tables), memoised on (build, key)."""
    memo_key = (build.__module__, build.__qualname__, key)
    found = _specs.get(memo_key)
    if found is None:
        found = _as_dict(build(*args))
        _specs.put(memo_key, found)
    return found
