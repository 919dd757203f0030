"""Rendering a Run: the error panel, the loss chart, the tables, the CSV."""

from __future__ import annotations

import streamlit as st

import fitlab
from fitlab import Config
from fitlab.cache import RunCache
from fitlab.charts import loss_chart
from fitlab.lesson import FIX_CODE, blog_figure_note, divergence_note, engine_note, error_explanation
from fitlab.run import Run
from fitlab.tables import history_csv
from ui.charts import draw


@st.cache_resource
def run_cache() -> RunCache:
    """The server's one run cache, shared by every session."""
    return RunCache(max_entries=64, max_bytes=256 * 2**20)


def run_with_progress(config: Config) -> Run:
    """The run for `config`, from the cache or trained with a progress bar."""
    bar = st.empty()
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = 100 * done // total
        if percent != shown[0]:  # one message per percent, not per epoch
            shown[0] = percent
            bar.progress(percent, text=f"Training: epoch {done} of {total}")

    run = run_cache().get(config, lambda c: fitlab.train(c, progress=progress))
    bar.empty()
    return run


def error_panel(run: Run) -> None:
    """The lesson: torch's real message, what went wrong, and the fix."""
    err = run.error
    st.error(f"**`loss.backward()` raised {err.type}** at epoch {err.epoch}, batch {err.batch}. "
             f"Torch's own message:\n\n`{err.message}`")
    st.markdown(error_explanation(run))
    st.code(FIX_CODE, language="python")


def loss_section(run: Run) -> None:
    """Final losses, the loss chart and its CSV; a diverged run says so first."""
    diverged = divergence_note(run)
    if diverged is not None:
        st.warning(diverged)
    last = run.history.iloc[-1]
    left, right = st.columns(2)
    left.metric("Final train MSE", f"{last.train_loss:.4g}")
    right.metric("Final test MSE", f"{last.test_loss:.4g}")
    # On by default: the loss falls by orders of magnitude and hugs zero on a linear axis.
    log_scale = st.toggle("Log scale", value=True, key="log_scale")
    with st.container(key="loss_chart"):  # a stable handle for the browser tests
        draw(loss_chart, (run.config, log_scale), run.history, log_scale)
    st.caption(blog_figure_note(run))
    st.caption(engine_note(run))
    st.download_button("Download the loss history (CSV)", data=history_csv(run),
                       file_name="fitlab-history.csv", mime="text/csv", key="download_history")


def parameter_tables(run: Run) -> None:
    """Teacher and student parameters side by side."""
    left, right = st.container(key="parameter_tables").columns(2)
    with left:
        st.subheader("Teacher")
        st.caption("The weights that made the labels.")
        st.dataframe(run.teacher_params, hide_index=True, width="stretch")
    with right:
        st.subheader("Student")
        st.caption("After training, started from a fresh Kaiming init." if run.error is None
                   else "Where training stopped.")
        st.dataframe(run.student_params, hide_index=True, width="stretch")
