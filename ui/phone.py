"""The page at phone size (390 px wide), and the layout rules Streamlit does
not apply by itself at any size, as CSS drawn once per run, in an element
that hides itself."""

from __future__ import annotations

import json

import streamlit as st

# The tab bar wraps onto a second row instead of scrolling sideways, where
# the last tabs are out of sight.
_TABS = '[data-testid="stTabs"] [role="tablist"] { flex-wrap: wrap; row-gap: 0.25rem; }'
# Less of Streamlit's empty band above the title (6rem), so that the first
# screen's moving picture and its Play end above the fold at 1280×720.
_TOP = '[data-testid="stMainBlockContainer"] { padding-top: 2.5rem; }'
# A table's toolbar (show, download, search, full screen) floats 44 px
# above it, over the caption a table has above it (on a phone, where a tap
# shows it, over the caption's words): the table leaves it that room.
_TOOLBAR_ROOM = ('[data-testid="stElementContainer"]:has(> [data-testid="stFullScreenFrame"] '
                 '> [data-testid="stDataFrame"]) { margin-top: 2rem; }')
# On a phone, what a finger taps is at least 44 px each way (Apple's and
# WCAG's target size): Streamlit draws the sidebar's toggle 28 px, a help
# icon 16 px, a slider's thumb 12 px. A transparent border or a negative
# margin grows what takes the tap, not what is drawn or the layout.
PHONE = 768  # px: Streamlit's own breakpoint, below which the sidebar is a sheet over the page
_TARGETS = f"""@media (max-width: {PHONE}px) {{
[data-testid="stExpandSidebarButton"], [data-testid="stSidebarCollapseButton"] button {{
  min-width: 44px; min-height: 44px; }}
[data-testid="stTooltipIcon"] button {{ min-width: 44px; min-height: 44px; margin: -14px; }}
[data-testid="stSlider"] div:has(> div > input[type="range"]) {{
  width: 44px; height: 44px; border: 16px solid transparent; background-clip: padding-box; box-sizing: border-box; }}
[data-testid="stCheckbox"] label {{ min-height: 44px; align-items: center; }}
}}"""
# The Watch tab's teacher-and-student heatmaps (160 px a matrix row, for a
# projector) are wider than a phone: they scroll sideways, not cut off.
_WIDE_PICTURES = f"@media (max-width: {PHONE}px) {{ .st-key-watch_weights {{ overflow-x: auto; }} }}"
NARROW = 640  # px: below this a table's cells stack
# Words only a screen whose sidebar starts closed needs (Streamlit's breakpoint: 768 px).
_WIDE_HIDES = "@media (min-width: 769px) { .fitlab-narrow { display: none; } }"  # PHONE + 1


# After a change made in the sidebar's sheet on a phone, the page closes
# the sheet and shows the result (the verdict, the lesson or the refusal),
# instead of leaving it under the sheet two screens up. Streamlit has no
# call for either: the page presses the sheet's own close button.
_RESULT_IN_VIEW = """<script>
(() => {
  if (window.fitlabResultInView) return;
  window.fitlabResultInView = true;
  const narrow = matchMedia("(max-width: %(phone)dpx)");
  const app = document.querySelector('[data-testid="stApp"]');
  let touched = false, ran = false;  // a control of the sheet touched; a run seen since
  const inSheet = (event) => event.composedPath().some(
    (node) => node.getAttribute && node.getAttribute("data-testid") === "stSidebar");
  for (const type of ["pointerdown", "keydown"])
    document.addEventListener(type, (event) => { touched = inSheet(event); ran = false; }, true);
  new MutationObserver(() => {
    const state = app.getAttribute("data-test-script-state");
    if (state !== "notRunning") { ran = ran || touched; return; }
    if (!ran || !narrow.matches) return;
    ran = touched = false;
    document.querySelector('[data-testid="stSidebarCollapseButton"] button[aria-expanded="true"]')?.click();
    const result = %(result)s.map((where) => document.querySelector(where)).find(Boolean);
    if (result) result.scrollIntoView({block: "start"});
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
})();
</script>"""
# Where a run's result begins, the first of these on the page: the verdict, the lesson, a
# refusal's offers, else the tabs.
RESULT = (".st-key-verdict", ".st-key-lesson", ".st-key-budget_offers", '[data-testid="stTabs"]')


def result_in_view() -> None:
    """On a phone, close the sidebar's sheet after a change made in it and
    scroll to the result. Call once per run; the browser installs it once."""
    st.sidebar.html(_RESULT_IN_VIEW % {"phone": PHONE, "result": json.dumps(RESULT)}, unsafe_allow_javascript=True)


# The style goes in by st.markdown, not st.html: the browser draws st.html
# from code it fetches on first use, which on a busy server came after the
# page's first run had finished, the sidebar's toggle 28 px till then;
# markdown's code comes with the page. Its element hides itself (a hidden
# style still applies), so it adds no space.
_SELF = ('[data-testid="stElementContainer"]:has(> [data-testid="stMarkdown"] .fitlab-page-style) '
         '{ display: none; }')


def narrow_screen_style() -> None:
    """The page's CSS for narrow screens; call once per run."""
    st.markdown(f'<style class="fitlab-page-style">{_SELF} {_TABS} {_TOP} {_WIDE_HIDES} {_TOOLBAR_ROOM} '
                f"{_TARGETS} {_WIDE_PICTURES}</style>", unsafe_allow_html=True)


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
