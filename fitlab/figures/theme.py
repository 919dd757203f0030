"""The look of every chart, set once: text a room can read off a projector.

Streamlit's own chart theme draws axis labels 12 px and titles 12–14 px in
#808495, about 3.7:1 on white: under WCAG AA's 4.5:1 for text, and too
small across a room. Every chart here carries THEME in its spec's config,
which Streamlit's theme yields to (the spec's config is merged over it):
Altair charts through the registered Altair theme "fitlab" (enabled when
fitlab.figures is imported), specs built as dicts (the Watch pictures)
through `config()`.
"""

from __future__ import annotations

import altair as alt

FONT_PX = 14        # the smallest text of a chart: axis labels, legends, subtitles
TITLE_PX = 16
INK = "#31333F"     # Streamlit's body text: 12.6:1 on white
NUMBER_FORMAT = ".3~g"  # d3-format, 3 significant digits: 0.001, 0.125, 1, 100, 1e+3, 1e+12; no commas
_TEXT = {"labelFontSize": FONT_PX, "titleFontSize": FONT_PX, "labelColor": INK, "titleColor": INK}

THEME = {
    "axis": {**_TEXT, "titleFontWeight": "normal"},
    # One number format on every quantitative axis: Vega's default mixed "10,000"
    # and "100,000,000" with "1e+12" on one log axis (a diverged run's).
    "axisQuantitative": {"format": NUMBER_FORMAT},
    "legend": {**_TEXT, "titleFontWeight": "normal"},
    "header": dict(_TEXT),
    "title": {"fontSize": TITLE_PX, "subtitleFontSize": FONT_PX, "color": INK, "subtitleColor": INK},
    "text": {"fontSize": FONT_PX, "color": INK},
}


def config() -> dict:
    """A copy of THEME, for a spec's "config"."""
    return {part: dict(values) for part, values in THEME.items()}


@alt.theme.register("fitlab", enable=True)
def fitlab_theme() -> alt.theme.ThemeConfig:
    """Altair's theme: THEME as every chart's config."""
    return alt.theme.ThemeConfig(config=config())
