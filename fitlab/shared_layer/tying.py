"""Tied versus untied student: what each is, side by side (the chart is
fitlab.figures.charts.tying_chart)."""

from __future__ import annotations

import pandas as pd

from fitlab.run import Run


def student_kind(run: Run) -> str:
    """Which student the run trained: "tied" or "untied"."""
    return "tied" if run.config.tied else "untied"


def tying_summary(runs: list[Run]) -> pd.DataFrame:
    """One row per run: student (tied/untied), number of parameters (one
    per entry of the parameter table), final train and test MSE."""
    return pd.DataFrame([{"student": student_kind(r), "parameters": len(r.student_params),
                          "final train MSE": r.history.train_loss.iloc[-1],
                          "final test MSE": r.history.test_loss.iloc[-1]} for r in runs])
