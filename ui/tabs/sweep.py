"""The Sweep section: a grid of two axes trained at once, its heatmap, and
loading any cell (by clicking it, or picking it) as the current run."""

from __future__ import annotations

from functools import partial

import streamlit as st

import fitlab
from fitlab import Config
from fitlab.figures.charts import sweep_heatmap
from fitlab.figures.tables import download_name, with_test_r2
from fitlab.serving.budget import OverBudget, check_sweep, sweep_seconds
from fitlab.sweeps import AXES, SWEEP_ENGINE, final_losses, grid, parse_axis
from ui.state import bar_updates, heavy
from ui.words import FIELD_LABELS, over_budget_message

HEATMAP = "sweep_heatmap"  # its selection: read-only, and gone with the heatmap
FRESH = "sweep_fresh"      # set by the run that trained the sweep: its result is scrolled into view
LOADED = "sweep_loaded"    # the cell last loaded as the current run, as {axis: value}

# A finished sweep's result is below the controls and the axes' notes, off
# the screen: the run that trained it scrolls it into view, once.
_SCROLL_TO_RESULT = """<script>
requestAnimationFrame(() => requestAnimationFrame(() =>
  document.querySelector(".st-key-sweep_result")?.scrollIntoView({block: "start"})));
</script>"""

DEFAULT_VALUES = {"lr": "0.001, 0.003, 0.01, 0.03, 0.1",
                  "seed": "0, 1, 2, 3",
                  "width": "2, 4, 8, 16"}

# What a sweep axis compares: only lr keeps the task fixed (fitlab.blog.setup
# draws the teacher, the data and the student from the seed, at the width).
SWEEP_AXIS_NOTES = {
    "lr": ("**lr** changes only the step size: the teacher, the data and the student's "
           "start stay the same, so cells compare fairly and the best lr is a real answer."),
    "seed": ("**seed** draws a new teacher, new data and a new start: read the spread down "
             "the seeds as how much a result owes to luck, not as a seed to choose; teach "
             "against the worst seeds as much as the best."),
    "width": ("**width** changes the teacher too (it is the same net): each width is a "
              "different task, so a narrow width may win because its task is easier, not "
              "because it learns better."),
}


def sweep_intro(config: Config) -> str:
    """The sweep's first words: which settings its cells take from the sidebar."""
    engine = FIELD_LABELS["engine"]
    if config.engine == SWEEP_ENGINE:
        return ("Every other setting is the sidebar's. All cells train at once, in one batched "
                f"computation on the {SWEEP_ENGINE} engine.")
    return (f"Every other setting is the sidebar's but **{engine}**: all cells train at once, in one "
            f"batched computation on the {SWEEP_ENGINE} engine, not {config.engine} (a cell loaded as the "
            "current run trains on the sidebar's engine).")


def sweep_settings(base: Config, x: str, y: str) -> str:
    """The settings a finished sweep's cells share, without its axes."""
    changes = {k: v for k, v in base.changes().items() if k not in (x, y, "engine", "epochs")}
    shared = ", ".join(f"{k}={v}" for k, v in changes.items()) or "the defaults"
    return f"After {base.epochs} epochs on the {SWEEP_ENGINE} engine; other settings: {shared}."


def sweep_section(config: Config, shown: bool = True) -> None:
    """Choose two axes and their values, train the grid, show the heatmap.
    With `shown` False (a tab not on screen) nothing is drawn; the choices,
    values, result and picked cell are kept."""
    if not shown:
        return
    st.header("Sweep: the learning rate, and how much luck matters")
    st.caption(sweep_intro(config))
    left, right = st.columns(2)
    x = left.selectbox("Across", AXES, key="sweep_x", persist_state="page")
    y = right.selectbox("Down", [a for a in AXES if a != x], key="sweep_y", persist_state="page")
    texts = {axis: column.text_input(f"{axis} values", DEFAULT_VALUES[axis], key=f"sweep_{axis}", persist_state="page")
             for axis, column in ((x, left), (y, right))}
    for axis in (x, y):
        st.caption(SWEEP_AXIS_NOTES[axis])
    if st.button("Run the sweep", key="sweep_run"):
        _train_sweep(config, x, y, texts)
    result = st.session_state.get("sweep_result")
    if result is not None:
        with st.container(key="sweep_result"):
            _show(*result)
            if st.session_state.pop(FRESH, False):
                st.html(_SCROLL_TO_RESULT, unsafe_allow_javascript=True)


def _train_sweep(config: Config, x: str, y: str, texts: dict) -> None:
    """Train the grid with a progress bar, within the work budget; keep its
    table in the session. A refused sweep leaves no old heatmap behind."""
    try:
        # A cell between a slider's stops loads as it is: ui.sidebar.stops_in_use.
        axes = {x: parse_axis(x, texts[x]), y: parse_axis(y, texts[y])}
        cells = grid(config, **axes)
        check_sweep(cells)
        bar = st.progress(0, text="Sweeping")
        results = heavy("the sweep", fitlab.sweep, config, progress=bar_updates(bar, "Sweeping"),
                        estimate=sweep_seconds(cells), **axes)
        bar.empty()
    except OverBudget as refused:
        st.session_state.pop("sweep_result", None)
        st.error(over_budget_message(refused))
        return
    except ValueError as exc:
        st.session_state.pop("sweep_result", None)
        # The reason quotes what was typed: shown as text, never as markdown.
        st.error("This sweep cannot run:")
        st.text(str(exc))
        return
    st.session_state["sweep_result"] = (config, x, y, with_test_r2(final_losses(results, [x, y]), list(results)))
    st.session_state[FRESH] = True
    st.session_state.pop(LOADED, None)


def _show(base: Config, x: str, y: str, table) -> None:
    """The heatmap of a finished sweep; a click on a cell, or the picker
    below it, loads that cell as the current run."""
    st.subheader(f"Final test MSE by {x} and {y}")
    st.caption(f"{sweep_settings(base, x, y)} Each cell is coloured by its test R² against the constant "
               "predictor (the training labels' mean): blue beats a constant, white is as good as one, red is "
               "worse. It is labelled with its test MSE where the cells are wide enough (on a phone the CSV "
               "below has every loss). Click a cell to open it as the current run.")
    loaded = st.session_state.get(LOADED)
    if loaded is not None:
        st.caption(f"Loaded as the current run: {cell_settings(loaded)} (its Training tab).")
    cells = table[[x, y]].to_dict("records")
    st.altair_chart(sweep_heatmap(table, x, y), width="stretch", key=HEATMAP,
                    on_select=partial(_load_clicked, base, cells), selection_mode="cell")
    pick, load = st.columns([3, 1], vertical_alignment="bottom")
    cell = pick.selectbox("Cell", cells, key="sweep_cell", persist_state="page",
                          format_func=cell_settings)
    load.button("Load as the current run", key="sweep_load", on_click=_load, args=(base, cell))
    st.download_button("Download the sweep (CSV)", data=table.to_csv(index=False, na_rep="nan"),
                       file_name=download_name("sweep", base, x, "by", y, leave_out=(x, y)), mime="text/csv",
                       key="download_sweep", on_click="ignore")


def cell_settings(cell: dict) -> str:
    """A cell's settings as the page names them: "lr=0.03, seed=3" (its values are numbers)."""
    return ", ".join(f"{k}={v:g}" for k, v in cell.items())


def opened_from_sweep(config: Config) -> None:
    """On the Training tab, one line naming the sweep cell the current run was
    loaded from, while the run still has that cell's settings."""
    loaded = st.session_state.get(LOADED)
    if loaded is not None and all(getattr(config, k) == v for k, v in loaded.items()):
        st.caption(f"Loaded from the sweep: {cell_settings(loaded)}; the other settings as the sweep had them.")


def _load_clicked(base: Config, cells: list[dict]) -> None:
    """The heatmap's click: load the clicked cell. The selection comes from
    the browser, so only a cell of this sweep is loaded (an empty selection is
    a click beside the cells)."""
    for clicked in st.session_state[HEATMAP]["selection"].get("cell") or []:
        cell = next((c for c in cells if all(clicked.get(k) == v for k, v in c.items())), None)
        if cell is not None:
            _load(base, cell)
            return


def _load(base: Config, cell: dict) -> None:
    """Set the sidebar's widgets to the cell's config and open its Training
    view (a callback runs before the rerun, when widget state may still be
    set)."""
    for key, value in {**base.as_dict(), **cell}.items():
        if key in st.session_state:
            st.session_state[key] = value
    st.session_state[LOADED] = dict(cell)
    st.session_state["view"] = "Training"
