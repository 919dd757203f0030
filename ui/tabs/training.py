"""The Training tab: final losses, the loss chart and its CSV, the run at
any epoch (ui/tabs/watch.py), the teacher's and the student's parameters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from fitlab.charts import loss_chart
from fitlab.run import Run
from fitlab.tables import history_csv, history_file_name
from fitlab.weights import padding_mask, parameter_matrix
from ui.charts import draw
from ui.tabs.watch import watch_section
from ui.text import (
    blog_figure_note,
    divergence_note,
    engine_note,
    fit_note,
    parameter_tables_note,
    r_squared_text,
    student_caption,
)


def loss_section(run: Run) -> None:
    """Final losses, the loss chart and its CSV; a diverged run says so first."""
    diverged = divergence_note(run)
    if diverged is not None:
        st.warning(diverged)
    last, base = run.history.iloc[-1], run.baseline
    columns = st.columns(4)
    for column, split in zip(columns[:2], ("train", "test")):
        column.metric(f"Final {split} MSE", f"{last[f'{split}_loss']:.4g}")
    for column, split in zip(columns[2:], ("train", "test")):
        column.metric(f"{split.capitalize()} R²", r_squared_text(base.r_squared(last[f"{split}_loss"], split)),
                      help=f"1 − MSE / variance of the {split} labels: 1 is a perfect fit, 0 is as good as "
                           "predicting their mean, below 0 is worse.")
    verdict = fit_note(run)
    if verdict is not None:
        text, worse = verdict
        if worse:  # not st.warning: that is the page's word for a link it could not use
            st.info(text, icon="⚠️")
        else:
            st.caption(text)
    # On by default: the loss falls by orders of magnitude and hugs zero on a linear axis.
    log_scale = st.toggle("Log scale", value=True, key="log_scale")
    with st.container(key="loss_chart"):  # a stable handle for the browser tests
        draw(loss_chart, (run.config, log_scale), run.history, log_scale, base, run.diverged_at)
    for note in (blog_figure_note(run), engine_note(run)):
        if note is not None:
            st.caption(note)
    st.download_button("Download the loss history (CSV)", data=history_csv(run),
                       file_name=history_file_name(run.config), mime="text/csv", key="download_history")


def watch(run: Run) -> None:
    """The run's pictures at any epoch, scrubbed and played in the browser."""
    watch_section(run, st.session_state.get("log_scale", True))


# Styling is a Python call per cell and a CSS rule sent per cell: beyond
# this many cells (width 16 has 561) the matrices are shown uncoloured.
MAX_COLOURED_CELLS = 5000


def _shown(params: pd.DataFrame, matrix: pd.DataFrame, bound: float):
    """The matrix as shown: each cell's background on the watch view's
    diverging scale (red below 0, blue above, stronger up to ±bound) while it
    is small enough to colour; padding past a layer's inputs blank, and a
    diverged run's NaN and inf written out (the grid would show "None")."""
    finite = np.isfinite(params["value"]).all()
    small = matrix.size <= MAX_COLOURED_CELLS and bound > 0
    if finite and not small:
        return matrix
    styler = matrix.style
    if small:
        def colour(value: float) -> str:
            if not np.isfinite(value):
                return ""
            alpha = min(abs(value) / bound, 1.0)
            rgb = "33, 102, 172" if value > 0 else "178, 24, 43"
            return f"background-color: rgba({rgb}, {alpha:.2f})"

        styler = styler.map(colour)
    styler = styler.format("{:.4f}", na_rep="nan")
    padding = padding_mask(params)
    for pattern, rows in padding.groupby(list(padding.columns), sort=False).groups.items():
        blank = [c for c, padded in zip(padding.columns, pattern) if padded]
        if blank:
            styler = styler.format("", subset=pd.IndexSlice[list(rows), blank])
    return styler


def parameter_tables(run: Run) -> None:
    """Teacher and student parameters side by side, each layer as its matrix
    (rows: output units; columns: inputs, then the bias), coloured on one
    scale for both."""
    teacher, student = parameter_matrix(run.teacher_params), parameter_matrix(run.student_params)
    values = np.concatenate([run.teacher_params.value, run.student_params.value])
    finite = np.abs(values[np.isfinite(values)])
    bound = float(max(np.abs(run.teacher_params.value).max(), np.quantile(finite, 0.995) if finite.size else 0))
    left, right = st.container(key="parameter_tables").columns(2)
    with left:
        st.subheader("Teacher")
        st.caption("The weights that made the labels.")
        st.dataframe(_shown(run.teacher_params, teacher, bound), width="stretch")
    with right:
        st.subheader("Student")
        st.caption(student_caption(run))
        st.dataframe(_shown(run.student_params, student, bound), width="stretch")
    st.caption(parameter_tables_note(teacher.size > MAX_COLOURED_CELLS))
