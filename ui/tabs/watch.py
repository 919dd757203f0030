"""The Watch it learn tab: the run's pictures at one epoch, one slider to
scrub through the recorded frames, and Play, all in the browser. Its own tab,
drawn only while open: its six pictures cost the browser about as much as
the rest of the Training tab (docs/browser.md).

Each picture is a Vega-Lite spec of its own (fitlab.figures.watch_charts) whose
epoch parameter is bound to a range input: Vega redraws it when the input
moves, and the script does not rerun. The pictures sit in columns, which
Streamlit stacks on a phone, so the page draws one slider of its own above
them (kept in sight while the pictures scroll by) and a few lines of
JavaScript move every picture's hidden input with it: one slider, one epoch
readout, Play with a speed and a loop.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import streamlit as st

from fitlab.figures.watch_charts import frame_scale, layer_distances, relative_distances, watch_panels
from fitlab.figures.watch_weights import DIAGRAM_MAX_WIDTH, HEATMAP_MAX_UNITS, layer_movement, layer_titles
from fitlab.run import Run
from ui.charts import spec

# The player's HTML, CSS and JavaScript, a %-template: only its own code and
# numbers from the run go in, nothing a user typed.
PLAYER = (Path(__file__).resolve().parents[1] / "assets" / "watch_player.html").read_text(encoding="utf-8")
PLAY_SECONDS = 6.0   # a whole run at normal speed, at any number of frames
MIN_TICK_MS = 40     # about the time Vega takes to redraw every picture
TOP_ROW = ("loss", "distance", "predictions")


def player_html(run: Run) -> str:
    """The slider, readout, play, speed and loop for this run's recorded epochs."""
    epochs = [int(e) for e in run.frames.epochs]
    last = run.config.epochs
    tick = max(MIN_TICK_MS, int(1000 * PLAY_SECONDS / max(1, len(epochs) - 1)))
    steps = {b - a for a, b in zip(epochs, epochs[1:])}
    step = steps.pop() if len(steps) == 1 else 1
    return PLAYER % {"epochs": json.dumps(epochs), "scale": frame_scale(run.frames, last), "tick": tick,
                     "last": last, "step": step}


def _percent(share: float) -> str:
    return f"{100 * share:.2g}%" if share < 0.1 else f"{100 * share:.0f}%"


def watch_note(run: Run) -> str:
    """One line: what the pictures show, and how much the student moved."""
    frames = run.frames
    last = int(frames.epochs[-1])
    movement = layer_movement(frames)
    if not all(math.isfinite(m) for m in movement):
        return (f"The student at the epoch the slider picks. Its weights diverged (inf or nan by epoch "
                f"{last}): move the slider back to see them before they did.")
    moved = ", ".join(f"{title} {_percent(share)}" for title, share in zip(layer_titles(frames),
                                                                          movement))
    relative = relative_distances(layer_distances(run))
    text = (f"The student at the epoch the slider picks. By epoch {last} its weights moved {moved} of "
            f"their size at epoch 0 (the middle pictures: each weight's change, each layer on its own scale)")
    if relative.empty:
        return text + "."
    at = int(relative.epoch.max())
    final = relative[relative.epoch == at]
    distance = ", ".join(f"{row.layer} {row.percent:.0f}%" for row in final.itertuples())
    when = "" if at == last else f" at epoch {at}, its last finite one"
    return f"{text}, and its distance to the teacher{when} is {distance} of where it started."


def recording_note(run: Run) -> str:
    """What was recorded, and what the pictures leave out, in words."""
    frames, config = run.frames, run.config
    n = len(frames.epochs)
    where = "every epoch" if n == config.epochs + 1 else f"{n} evenly spaced epochs (the nearest one is shown)"
    notes = [f"Drag the epoch slider above the pictures, or press Play: every picture moves to that epoch in "
             f"your browser, nothing is recomputed. The student was recorded at {where}; epoch 0 is the "
             f"fresh student. Colours: red below 0, blue above, white at 0; teacher and student share one "
             f"scale (equal colours, equal values)."]
    if config.width > HEATMAP_MAX_UNITS:
        notes.append(f"At width {config.width} each heatmap shows its matrix's top-left "
                     f"{HEATMAP_MAX_UNITS} × {HEATMAP_MAX_UNITS} corner.")
    if config.width > DIAGRAM_MAX_WIDTH:
        notes.append(f"The net's diagram is drawn for widths up to {DIAGRAM_MAX_WIDTH}.")
    return " ".join(notes)


def watch_section(run: Run) -> None:
    """The Watch it learn tab: the scrubbable pictures of a finished run, with
    one slider and Play. Their data stay tables, converted as they are drawn:
    see ui/charts.py."""
    # Its loss panel follows the Training tab's Log scale toggle, drawn earlier in every run.
    log_scale = st.session_state.get("log_scale", True)
    panels = spec(watch_panels, (run.config, log_scale), run, log_scale)
    with st.container(key="watch"):
        st.markdown(watch_note(run))
        st.html(player_html(run), unsafe_allow_javascript=True)
        with st.container(key="watch_pictures"):   # a stable handle for the player and the browser tests
            for column, name in zip(st.columns(len(TOP_ROW)), TOP_ROW):
                with column, st.container(key=f"watch_{name}"):
                    st.vega_lite_chart(panels[name], width="stretch")
            below = [name for name in ("diagram", "change", "weights") if name in panels]
            for column, name in zip(st.columns([1.2, 1, 1.5][-len(below):]), below):
                with column, st.container(key=f"watch_{name}"):
                    st.vega_lite_chart(panels[name], width="stretch" if name == "diagram" else "content")
        st.caption(recording_note(run))
