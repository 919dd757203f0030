"""The Watch it learn tab: the run's pictures at one epoch, one slider to
scrub through the recorded frames, and Play, all in the browser. Its own tab,
drawn only while open: its six pictures cost the browser about as much as
the rest of the Training tab (docs/measurements/browser.md).

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
from fitlab.figures.watch_weights import (
    DIAGRAM_MAX_WIDTH,
    HEATMAP_MAX_UNITS,
    beyond_colour_scale,
    layer_movement,
    layer_titles,
)
from fitlab.run import Run
from ui.charts import spec
from ui.phone import PHONE

# The player's HTML, CSS and JavaScript, a %-template: only its own code and
# numbers from the run go in, nothing a user typed.
PLAYER = (Path(__file__).resolve().parents[1] / "assets" / "watch_player.html").read_text(encoding="utf-8")
PLAY_SECONDS = 6.0   # a whole run at normal speed, at any number of frames
# The first screen's pictures (the Training tab's glance), and their height:
# with the title, the intro and the tab bar they end above the fold of a
# 1280×720 projector.
GLANCE = ("loss", "predictions")
GLANCE_HEIGHT = 110
MIN_TICK_MS = 40     # about the time Vega takes to redraw every picture
TOP_ROW = ("loss", "distance", "predictions")


def player_html(run: Run, scope: str = "watch") -> str:
    """The slider, readout, play, speed and loop for this run's recorded
    epochs, moving the pictures in the container `scope`_pictures."""
    epochs = [int(e) for e in run.frames.epochs]
    last = run.last_epoch
    tick = max(MIN_TICK_MS, int(1000 * PLAY_SECONDS / max(1, len(epochs) - 1)))
    steps = {b - a for a, b in zip(epochs, epochs[1:])}
    step = steps.pop() if len(steps) == 1 else 1
    return PLAYER % {"epochs": json.dumps(epochs), "scale": frame_scale(run.frames, last), "tick": tick,
                     "last": last, "step": step, "scope": scope, "phone": PHONE}


def _percent(share: float) -> str:
    return f"{100 * share:.2g}%" if share < 0.1 else f"{100 * share:.0f}%"


def watch_note(run: Run) -> str:
    """One line: what the pictures show, and how much the student moved."""
    frames = run.frames
    last = int(frames.epochs[-1])
    movement = layer_movement(frames)
    if run.diverged_at is not None or not all(math.isfinite(m) for m in movement):
        return (f"The student at the epoch the slider picks. Its weights diverged (its loss inf or nan at "
                f"epoch {last}, where training stopped): move the slider back to see them before they did.")
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


def shared_scale_note(run: Run) -> str:
    """How the teacher's and the student's weights share one colour scale,
    and how many of the student's values it clamps."""
    bound, beyond, recorded = beyond_colour_scale(run.student_teacher.teacher, run.frames)
    note = f"teacher and student share one scale, ±{bound:.3g}: equal colours, equal values within it"
    if beyond == 0:
        return note + "."
    return (f"{note}; {beyond:,} of the student's {recorded:,} recorded values lie past it and take its "
            "end colour (it ends at the larger of the teacher's largest value and the 99.5th percentile "
            "of the student's, so that a few far values do not wash out the rest).")


def recording_note(run: Run) -> str:
    """What was recorded, and what the pictures leave out, in words."""
    frames, config = run.frames, run.config
    n = len(frames.epochs)
    where = "every epoch" if n == config.epochs + 1 else f"{n} evenly spaced epochs (the nearest one is shown)"
    notes = [f"Drag the epoch slider above the pictures, or press Play: every picture moves to that epoch in "
             f"your browser, nothing is recomputed. The student was recorded at {where}; epoch 0 is the "
             f"fresh student. Colours: red below 0, blue above, white at 0; {shared_scale_note(run)}"]
    if config.width > HEATMAP_MAX_UNITS:
        notes.append(f"At width {config.width} each heatmap shows its matrix's top-left "
                     f"{HEATMAP_MAX_UNITS} × {HEATMAP_MAX_UNITS} corner.")
    if config.width > DIAGRAM_MAX_WIDTH:
        notes.append(f"The net's diagram is drawn for widths up to {DIAGRAM_MAX_WIDTH}.")
    return " ".join(notes)


def watch_section(run: Run) -> None:
    """The Watch it learn tab: the scrubbable pictures of a finished run, with
    one slider and Play."""
    # Its loss panel follows the Training tab's Log scale toggle, drawn earlier in every run.
    log_scale = st.session_state.get("log_scale", True)
    panels = spec(watch_panels, (run.config, log_scale), run, log_scale)
    with st.container(key="watch"):
        st.markdown(watch_note(run))
        st.html(player_html(run), unsafe_allow_javascript=True)
        with st.container(key="watch_pictures"):   # a stable handle for the player and the browser tests
            for column, name in zip(st.columns(len(TOP_ROW)), TOP_ROW):
                with column, st.container(key=f"watch_{name}"):
                    # A picture of a fixed size (the square scatter) keeps it.
                    fixed = isinstance(panels[name].get("width"), int)
                    st.vega_lite_chart(panels[name], width="content" if fixed else "stretch")
            # The diagram and the change side by side, the weights (teacher and student) a row of
            # their own: heatmaps of 160 px a matrix row, to be read across a room.
            below = [name for name in ("diagram", "change") if name in panels]
            for column, name in zip(st.columns([1.2, 1][-len(below):]), below):
                with column, st.container(key=f"watch_{name}"):
                    st.vega_lite_chart(panels[name], width="stretch" if name == "diagram" else "content")
            with st.container(key="watch_weights"):
                st.vega_lite_chart(panels["weights"], width="content")
        st.caption(recording_note(run))


def watch_glance(run: Run) -> None:
    """The first screen's moving picture: the Watch it learn tab's player
    over two of its pictures, the loss curves growing to the shown epoch and
    the test rows' predictions on fixed axes, side by side (stacked on a
    phone)."""
    log_scale = st.session_state.get("log_scale", True)
    panels = spec(watch_panels, (run.config, log_scale, GLANCE), run, log_scale, GLANCE)
    with st.container(key="glance"):
        st.html(player_html(run, "glance"), unsafe_allow_javascript=True)
        with st.container(key="glance_pictures"):
            for column, name in zip(st.columns(len(GLANCE)), GLANCE):
                with column, st.container(key=f"glance_{name}"):
                    made = panels[name]
                    square = made.get("width") == made.get("height")   # a square drawn at its own size stays one
                    size = {"height": GLANCE_HEIGHT, **({"width": GLANCE_HEIGHT} if square else {})}
                    st.vega_lite_chart({**made, **size}, width="content" if square else "stretch")
