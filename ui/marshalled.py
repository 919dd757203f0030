"""Tables built into their message once per run, and sent again as they are.

A parameter table is a pandas Styler (a tint and a format per cell):
`st.dataframe` recomputed every cell's style and display text on every page
run, about three quarters of a cached page's CPU (measured with cProfile:
0.8 of 1.07 s). A table drawn from one run never changes, so its message
(Streamlit's Dataframe proto, made as `st.dataframe` makes it, read only) is
built on its first draw and reused, by every session, afterwards. A
width-256 run's two tables are 2.2 MB of messages: the kept ones are bounded
by bytes, the least recently drawn forgotten first (built again, from its
run, when drawn again).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler
from streamlit import dataframe_util
from streamlit.elements.lib.column_config_utils import (
    apply_data_specific_configs,
    marshall_column_config,
    process_config_mapping,
)
from streamlit.elements.lib.layout_utils import LayoutConfig
from streamlit.elements.lib.pandas_styler_utils import marshall_styler
from streamlit.proto.Dataframe_pb2 import Dataframe as DataframeProto

from fitlab.serving.memo import Memo
from ui import state

# Server-wide, bounded by the messages' bytes: the tables of about 25 width-256 runs.
_kept_messages = Memo(max_bytes=64 * 2**20)  # of DataframeProto


def dataframe(key: Hashable, build: Callable[[], pd.DataFrame | Styler], height: int | None = None) -> None:
    """st.dataframe(build(), width="stretch", height=height), its message
    built on the first draw of `key` and reused afterwards: `key` must
    determine the table (say, the run's Config and which net)."""
    # The message is copied into the page's delta: the kept one stays as built.
    layout = LayoutConfig(width="stretch", height=height) if height else LayoutConfig(width="stretch")
    st._main._enqueue("dataframe", _kept(key, build), layout_config=layout)


def _kept(key: Hashable, build: Callable[[], pd.DataFrame | Styler]) -> DataframeProto:
    """message(build()), once per `key` while it is kept, shared by every session."""
    found = _kept_messages.get(key)
    if found is None:
        state.let_others_draw()
        found = message(build(), uuid="t" + hashlib.sha1(repr(key).encode()).hexdigest()[:12])
        _kept_messages.put(key, found, found.ByteSize())
    return found


def message(data: pd.DataFrame | Styler, uuid: str) -> DataframeProto:
    """The Dataframe proto st.dataframe(data) sends (read only, no column
    config), a Styler's cells under `uuid` (st.dataframe's default is the
    element's place on the page)."""
    proto = DataframeProto()
    proto.editing_mode = DataframeProto.EditingMode.READ_ONLY
    if isinstance(data, Styler):
        marshall_styler(proto.arrow_data, data, uuid)
    frame = dataframe_util.convert_anything_to_pandas_df(data, ensure_copy=False)
    columns = process_config_mapping(None)
    apply_data_specific_configs(columns, dataframe_util.determine_data_format(data))
    proto.arrow_data.data = dataframe_util.convert_pandas_df_to_arrow_bytes(frame)
    marshall_column_config(proto, columns)
    return proto


def forget() -> None:
    """Forget every kept table (a benchmark's fresh start)."""
    _kept_messages.clear()
