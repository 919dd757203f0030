"""The Sweep section: a grid of two axes trained at once, its heatmap, and
loading any cell as the current run."""

from __future__ import annotations

import streamlit as st

import fitlab
from fitlab import Config
from fitlab.charts import sweep_heatmap
from fitlab.sweeps import AXES, final_losses, parse_axis
from ui.state import TabKeys, heavy

KEYS = TabKeys("sweep")

DEFAULT_VALUES = {"lr": "0.001, 0.003, 0.01, 0.03, 0.1",
                  "seed": "0, 1, 2, 3",
                  "width": "2, 5, 10, 20"}


def sweep_section(config: Config, shown: bool = True) -> None:
    """Choose two axes and their values, train the grid, show the heatmap.
    With `shown` False (a tab not on screen) nothing is drawn; the choices,
    values, result and picked cell are kept."""
    if not shown:
        KEYS.keep()
        return
    st.header("Sweep: which lr, seed or width is best?")
    st.caption("Every other setting is the sidebar's. All cells train at once, "
               "in one batched computation.")
    left, right = st.columns(2)
    x = left.selectbox("Across", AXES, key=KEYS("x"))
    y = right.selectbox("Down", [a for a in AXES if a != x], key=KEYS("y"))
    texts = {axis: column.text_input(f"{axis} values", DEFAULT_VALUES[axis], key=KEYS(axis))
             for axis, column in ((x, left), (y, right))}
    if st.button("Run the sweep", key="sweep_run"):
        _train_sweep(config, x, y, texts)
    shown = st.session_state.get("sweep_result")
    if shown is not None:
        _show(*shown)


def _train_sweep(config: Config, x: str, y: str, texts: dict) -> None:
    """Train the grid with a progress bar; keep its table in the session."""
    try:
        axes = {x: parse_axis(x, texts[x]), y: parse_axis(y, texts[y])}
        bar = st.progress(0, text="Sweeping")
        results = heavy("the sweep", fitlab.sweep, config, progress=lambda done, total: bar.progress(
            done / total, text=f"Sweeping: epoch {done} of {total}"), **axes)
        bar.empty()
    except ValueError as exc:
        st.error(f"This sweep cannot run: {exc}")
        return
    st.session_state["sweep_result"] = (config, x, y, final_losses(results, [x, y]))


def _show(base: Config, x: str, y: str, table) -> None:
    """The heatmap of a finished sweep, and a way to load any cell."""
    changes = ", ".join(f"{k}={v}" for k, v in base.changes().items()) or "the defaults"
    st.caption(f"Final test MSE after {base.epochs} epochs; other settings: {changes}.")
    st.altair_chart(sweep_heatmap(table, x, y), width="stretch")
    cells = table[[x, y]].to_dict("records")
    pick, load = st.columns([3, 1], vertical_alignment="bottom")
    cell = pick.selectbox("Cell", cells, key=KEYS("cell"),
                          format_func=lambda c: ", ".join(f"{k}={v}" for k, v in c.items()))
    load.button("Load as the current run", key="sweep_load", on_click=_load, args=(base, cell))


def _load(base: Config, cell: dict) -> None:
    """Set the sidebar's widgets to the cell's config (a callback runs before
    the rerun, when widget state may still be set)."""
    for key, value in {**base.as_dict(), **cell}.items():
        if key in st.session_state:
            st.session_state[key] = value
