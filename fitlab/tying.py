"""Tied versus untied student: parameter count and loss curves side by side."""

from __future__ import annotations

import altair as alt
import pandas as pd

from fitlab.charts import loss_long
from fitlab.run import Run


def _student(run: Run) -> str:
    return "tied" if run.config.tied else "untied"


def tying_summary(runs: list[Run]) -> pd.DataFrame:
    """One row per run: student (tied/untied), number of parameters (one
    per entry of the parameter table), final train and test MSE."""
    return pd.DataFrame([{"student": _student(r), "parameters": len(r.student_params),
                          "final train MSE": r.history.train_loss.iloc[-1],
                          "final test MSE": r.history.test_loss.iloc[-1]} for r in runs])


def tying_curves(runs: list[Run]) -> pd.DataFrame:
    """The runs' drawable losses in long form: epoch, split, loss, student."""
    return pd.concat([loss_long(r.history).assign(student=_student(r)) for r in runs],
                     ignore_index=True)


def tying_chart(runs: list[Run]) -> alt.Chart:
    """Train and test MSE per epoch, colour by split, dash by student."""
    return (
        alt.Chart(tying_curves(runs))
        .mark_line()
        .encode(
            x=alt.X("epoch:Q"),
            y=alt.Y("loss:Q", title="mean squared error"),
            color=alt.Color("split:N", title=None, sort=["train", "test"],
                            scale=alt.Scale(range=["#1f77b4", "#ff7f0e"])),
            strokeDash=alt.StrokeDash("student:N", title="student", sort=["tied", "untied"]),
            tooltip=["epoch:Q", "student:N", "split:N", alt.Tooltip("loss:Q", format=".6g")],
        )
        .properties(height=280)
        .interactive(bind_y=False)
    )
