"""What a run looks like: Vega-Lite specs and CSV tables. The words in charts live here, nowhere else in the library."""
