"""The page at phone size (390 px wide): the layout rules Streamlit does not
apply by itself, as CSS drawn once per run (st.html with only a style adds
no space to the page)."""

from __future__ import annotations

import streamlit as st

# The tab bar wraps onto a second row instead of scrolling sideways, where
# the last tabs are out of sight.
_TABS = '[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; row-gap: 0.25rem; }'
# Less of Streamlit's empty band above the title (6rem), so that the first
# screen's moving picture and its Play end above the fold at 1280×720.
_TOP = '[data-testid="stMainBlockContainer"] { padding-top: 2.5rem; }'
NARROW = 640  # px: below this a table's cells stack
# Words only a screen whose sidebar starts closed needs (Streamlit's breakpoint: 768 px).
_WIDE_HIDES = "@media (min-width: 769px) { .fitlab-narrow { display: none; } }"


def narrow_screen_style() -> None:
    """The page's CSS for narrow screens; call once per run."""
    st.html(f"<style>{_TABS} {_TOP} {_WIDE_HIDES}</style>")


def stacked_table_style(key: str, columns: list[str]) -> None:
    """On a narrow screen, the st.table inside the container `key` shows
    each row as a block, each cell on its own line under its column's name,
    instead of columns that run off the screen."""
    scope = f".st-key-{key}"
    labels = "".join(
        f'{scope} td:nth-of-type({i}):not(:empty)::before {{ content: "{name}"; display: block; '
        f"font-size: 0.8em; opacity: 0.7; }}"
        for i, name in enumerate(columns, start=1) if i > 1)
    st.html(f"""<style>@media (max-width: {NARROW}px) {{
{scope} thead {{ display: none; }}
{scope} table, {scope} tbody, {scope} tr, {scope} td {{ display: block; width: 100%; }}
{scope} tr {{ padding: 0.5rem 0; border-bottom: 2px solid rgba(49, 51, 63, 0.2); }}
{scope} td {{ border: none; }}
{scope} td:nth-of-type(1) {{ font-weight: 600; }}
{labels}
}}</style>""")
