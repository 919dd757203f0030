"""Charts drawn with st.vega_lite_chart, each spec built once per run.

Building an Altair chart and validating its spec is slow next to a page run, and
st.vega_lite_chart converts a spec's data sets through pandas to Arrow IPC bytes on
every draw. A chart of one run with one set of options never changes, so its spec
is built once, server-wide, its data sets as those bytes, which st.vega_lite_chart
sends as they are. Every session gets the same dict, uncopied: it is read only
(st.vega_lite_chart copies a spec before taking its data out).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import altair as alt
import pandas as pd
import pyarrow as pa
import streamlit as st

from fitlab import Config
from ui import state

MAX_SPECS = 256  # server-wide, by count
# Caches keyed by a Config hash its repr (its fields, in order): Streamlit's own
# hashing of the dataclass is a few times slower, on every lookup
# (docs/measurements/robustness.md).
KEYED_BY_REPR = {Config: repr}


def draw(build: Callable[..., alt.TopLevelMixin | dict], key: Hashable, *args) -> None:
    """Draw the chart build(*args), full width. `key` must determine the
    chart (say, the run's Config and the chart's options): see spec."""
    st.vega_lite_chart(spec(build, key, *args), width="stretch")


def spec(build: Callable[..., alt.TopLevelMixin | dict], key: Hashable, *args) -> dict:
    """The Vega-Lite spec of build(*args) (an Altair chart, a spec, or a
    dict of specs by name), its data sets Arrow IPC bytes, built on the first
    call for (build, key) by any session and shared, read only, afterwards."""
    state.let_others_draw()  # before, not inside, the cached build (see there)
    return kept(name=f"{build.__module__}.{build.__qualname__}", key=key, _make=lambda: _with_arrow(build(*args)))


@st.cache_resource(max_entries=MAX_SPECS, show_spinner=False, hash_funcs=KEYED_BY_REPR)
def kept(name: str, key: Hashable, _make: Callable[[], dict]) -> dict:
    """_make(), once per (name, key) while kept (kept.clear() forgets all). Called by keyword:
    Streamlit reads a positional argument's name from the signature on every lookup."""
    return _make()


def _with_arrow(chart: alt.TopLevelMixin | dict) -> dict:
    """The spec (or each spec of a dict of them) with its data sets as Arrow
    IPC bytes, converted as st.vega_lite_chart converts them (pandas' rules)."""
    made = chart if isinstance(chart, dict) else chart.to_dict()
    if "datasets" not in made and all(isinstance(v, dict) for v in made.values()):
        return {name: _with_arrow(one) for name, one in made.items()}
    if "datasets" not in made:
        return made
    tables = {name: _ipc(pa.Table.from_pandas(rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)))
              for name, rows in made["datasets"].items()}
    return {**made, "datasets": tables}


def _ipc(table: pa.Table) -> bytes:
    """The table as one Arrow IPC stream, the bytes the browser reads."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
