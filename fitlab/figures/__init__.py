"""What a run looks like: Vega-Lite specs and CSV tables. The words in charts live here, nowhere else in the library.

Importing the package sets the charts' one theme (theme.py)."""

from fitlab.figures import theme  # noqa: F401  (registers and enables the charts' theme)
