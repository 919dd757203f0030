"""ui.marshalled: a parameter table's message, built once per run, is the
message st.dataframe sends for the same table, and later page runs send it
again without restyling a cell."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

import ui.tabs.training as training
from fitlab.serving.memo import Memo
from tests.page.helpers import run_page


def both_ways():
    import numpy as np
    import pandas as pd
    import streamlit as st

    from ui import marshalled

    frame = pd.DataFrame(np.arange(12, dtype=float).reshape(3, 4) - 5.5, columns=["in 0", "in 1", "in 2", "bias"])
    frame.iloc[1, 2] = np.nan
    styled = (frame.style.map(lambda v: "background-color: #abcdef" if v > 0 else "")
              .format("{:.4f}", na_rep="nan").set_uuid("same"))
    st.dataframe(styled, width="stretch")
    marshalled.dataframe(("a table", 1), lambda: styled)
    st.dataframe(frame, width="stretch")
    marshalled.dataframe(("a table", 2), lambda: frame)


def test_the_kept_message_is_st_dataframes():
    at = AppTest.from_function(both_ways).run()
    assert not at.exception
    direct, kept, plain, plain_kept = (d.proto for d in at.dataframe)
    assert kept == direct and plain_kept == plain
    assert kept.arrow_data.styler.display_values  # the formatted text, "nan" included
    assert kept.arrow_data.styler.styles == direct.arrow_data.styler.styles != ""


def test_page_runs_after_the_first_style_no_cell(empty_cache, monkeypatch):
    query = {"width": "16", "epochs": "20", "seed": "11"}
    first = run_page(120, **query)
    styled = []
    monkeypatch.setattr(training, "_styled_matrix", lambda *a, **k: styled.append(a) or pd.DataFrame())
    later = run_page(120, **query)
    assert not first.exception and not later.exception and styled == []
    assert [d.proto for d in later.dataframe] == [d.proto for d in first.dataframe]
    teacher = later.dataframe[0].value
    assert teacher.shape[0] > 16 and np.isfinite(teacher.select_dtypes("number").to_numpy(float)).any()


def test_the_kept_messages_are_bounded_by_bytes(monkeypatch):
    from ui import marshalled

    marshalled.forget()
    tables = {k: pd.DataFrame(np.random.default_rng(k).normal(size=(200, 40))) for k in range(8)}
    one = marshalled.message(tables[0], "x").ByteSize()
    bound = 3 * one + one // 2
    monkeypatch.setattr(marshalled, "_kept_messages", Memo(max_bytes=bound))
    built = []

    def kept(k):
        return marshalled._kept(("a run", k), lambda: built.append(k) or tables[k])

    try:
        for k in tables:
            kept(k)
        assert built == list(tables) and marshalled._kept_messages.nbytes <= bound
        kept(7), kept(5)  # the most recent are kept: nothing built again
        assert built == list(tables)
        kept(0)  # forgotten, built again from its table: the same message
        assert built[-1] == 0 and marshalled._kept(("a run", 0), lambda: None) == marshalled.message(
            tables[0], "t" + hashlib.sha1(repr(("a run", 0)).encode()).hexdigest()[:12])
    finally:
        marshalled.forget()
