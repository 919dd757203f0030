"""Altair charts of a run, built here so tests can inspect them without a page."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

SPLIT_LABELS = {"train_loss": "train", "test_loss": "test"}


def loss_long(history: pd.DataFrame, log_scale: bool = False) -> pd.DataFrame:
    """History in long form (epoch, split, loss), only the points a chart can
    draw: finite values, and positive ones on a log axis (which would drop the
    rest silently)."""
    long = history.melt(id_vars="epoch", value_vars=list(SPLIT_LABELS),
                        var_name="split", value_name="loss")
    long["split"] = long["split"].map(SPLIT_LABELS)
    drawable = np.isfinite(long["loss"]) & ((long["loss"] > 0) if log_scale else True)
    return long[drawable].reset_index(drop=True)


def loss_chart(history: pd.DataFrame, log_scale: bool = False) -> alt.Chart:
    """Train and test MSE per epoch, one line each, with tooltips."""
    data = loss_long(history, log_scale)
    scale = alt.Scale(type="log") if log_scale else alt.Scale(zero=True)
    return (
        alt.Chart(data)
        .mark_line(point=alt.OverlayMarkDef(size=12, opacity=0) if len(history) > 60 else True)
        .encode(
            x=alt.X("epoch:Q", title="epoch"),
            y=alt.Y("loss:Q", title="mean squared error", scale=scale),
            color=alt.Color("split:N", title=None, sort=["train", "test"],
                            scale=alt.Scale(range=["#1f77b4", "#ff7f0e"])),
            tooltip=[alt.Tooltip("epoch:Q"), alt.Tooltip("split:N"),
                     alt.Tooltip("loss:Q", format=".6g")],
        )
        .properties(height=320)
        .interactive(bind_y=False)
    )
