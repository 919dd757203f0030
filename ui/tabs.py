"""Tabs that draw their content only while open.

Every element on the page costs the browser time on every rerun, drawn or
hidden in a closed tab alike (a rerun re-renders them all), so a closed tab
draws nothing. Streamlit forgets the value of a widget that a run does not
draw; `keep` carries such values over to the next run.
"""

from __future__ import annotations

from typing import Iterable

import streamlit as st


def keep(keys: Iterable[str]) -> None:
    """Keep the values of the widgets `keys` that this run does not draw."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
