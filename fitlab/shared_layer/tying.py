"""Tied versus untied student: which one a run trained (side by side: the
chart fitlab.figures.charts.tying_chart, the table fitlab.figures.tables.tying_summary)."""

from __future__ import annotations

from fitlab.run import Run


def student_kind(run: Run) -> str:
    """Which student the run trained: "tied" or "untied"."""
    return "tied" if run.config.tied else "untied"

