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


def sweep_heatmap(table: pd.DataFrame, x: str, y: str) -> alt.LayerChart:
    """Final test loss of each sweep config as a heatmap over two axes (log
    colour scale); a diverged config (non-finite loss) is marked in words."""
    finite = np.isfinite(table["test_loss"]) & (table["test_loss"] > 0)
    base = alt.Chart(table[finite]).encode(
        x=alt.X(f"{x}:O", title=x), y=alt.Y(f"{y}:O", title=y, sort="descending"))
    cells = base.mark_rect().encode(
        color=alt.Color("test_loss:Q", title="final test MSE",
                        scale=alt.Scale(type="log", scheme="viridis", reverse=True)),
        tooltip=[alt.Tooltip(f"{x}:O"), alt.Tooltip(f"{y}:O"),
                 alt.Tooltip("test_loss:Q", title="final test MSE", format=".4g"),
                 alt.Tooltip("train_loss:Q", title="final train MSE", format=".4g")])
    labels = base.mark_text(fontSize=10).encode(text=alt.Text("test_loss:Q", format=".2g"))
    diverged = alt.Chart(table[~finite].assign(note="diverged")).mark_text(color="#d62728").encode(
        x=alt.X(f"{x}:O"), y=alt.Y(f"{y}:O", sort="descending"), text="note:N")
    return alt.layer(cells, labels, diverged).properties(height=320)
