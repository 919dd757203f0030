"""Share links: the sidebar's state lives in the URL, and a bad URL is
answered with a warning and a working page, never a traceback.

Streamlit drops a bound URL value it cannot use (wrong type, out of range)
silently; to say so, the page remembers the URL it was opened with before any
widget reads it, and compares it with what the widgets ended up holding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import streamlit as st

URL = "query-params"  # the widgets' bind= value: the setting lives in the URL
_OPENED_WITH = "url_opened_with"  # session key of the URL the session began with


def remember_url() -> None:
    """Keep the query parameters the session was opened with; call before
    any widget is drawn (widgets consume and correct them)."""
    if _OPENED_WITH not in st.session_state:
        st.session_state[_OPENED_WITH] = {k: st.query_params.get_all(k) for k in st.query_params}


def url_problems(requested: Mapping[str, list[str]], settings: Mapping[str, object]) -> list[str]:
    """One sentence per query parameter the page could not honour.

    `requested` maps each key of the URL to its values; `settings` maps each
    widget key to the value the widget holds after reading the URL.
    """
    problems = []
    for key, values in requested.items():
        if key not in settings or key == _OPENED_WITH:
            problems.append(f"`{key}` is not a setting of this page; ignored.")
        elif len(values) != 1:
            problems.append(f"`{key}` is given {len(values)} times; using {settings[key]!r}.")
        elif not _means(values[0], settings[key]):
            problems.append(f"`{key}={values[0]}` is not allowed; using {settings[key]!r}.")
    return problems


def warn_about_url() -> None:
    """Once per session, after every widget is drawn: a warning listing the
    URL's keys and values the page ignored."""
    requested = st.session_state.get(_OPENED_WITH)
    if not requested:
        return
    st.session_state[_OPENED_WITH] = {}  # warn on the first view only
    problems = url_problems(requested, st.session_state.to_dict())
    if problems:
        st.sidebar.warning("**Some of this link was ignored.**\n\n" +
                           "\n".join(f"- {p}" for p in problems))


def _means(text: str, value: object) -> bool:
    """Whether URL text `text` denotes the widget value `value`."""
    if isinstance(value, bool):
        return text.lower() == str(value).lower()
    if isinstance(value, (int, float)):
        try:
            number = float(text)
        except ValueError:
            return False
        return math.isfinite(number) and number == value
    return text == str(value)
