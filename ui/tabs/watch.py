"""The Watch it learn tab: the run's pictures at one epoch, one slider to
scrub through the recorded frames, and Play, all in the browser. Its own tab,
drawn only while open: its six pictures cost the browser about as much as
the rest of the Training tab (docs/browser.md).

Each picture is a Vega-Lite spec of its own (fitlab.watch_charts) whose
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

import streamlit as st

from fitlab.run import Run
from fitlab.watch_charts import frame_scale, layer_distances, relative_distances, watch_panels
from fitlab.watch_weights import DIAGRAM_MAX_WIDTH, HEATMAP_MAX_UNITS, layer_movement, layer_titles
from ui.charts import spec

# Only this file's own code and numbers from the run go in: nothing a user typed.
PLAYER = """
<style>
  /* The page's slider moves every picture; their own inputs stay hidden. */
  .st-key-%(scope)s_pictures .vega-bindings { display: none !important; }
  /* The controls stay in reach while the pictures scroll under them. */
  .st-key-%(scope)s [data-testid="stElementContainer"]:has(.fitlab-player) {
    position: sticky; top: 3.75rem; z-index: 20; background: var(--background-color, #fff);
    padding: .25rem 0; }
  .fitlab-player { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: center; }
  .fitlab-player input[type="range"] { flex: 1 1 16rem; min-width: 12rem; }
  .fitlab-player button { min-width: 6.5rem; }
  .fitlab-player [data-role="readout"] { font-variant-numeric: tabular-nums; font-weight: 600; min-width: 9rem; }
</style>
<div class="fitlab-player">
  <button type="button" data-act="play">▶ Play</button>
  <input type="range" data-role="epoch" aria-label="epoch" min="0" max="%(last)d" step="%(step)d" value="%(last)d">
  <span data-role="readout" aria-live="polite">epoch %(last)d of %(last)d</span>
  <label>Speed <select data-role="speed">
    <option value="0.5">slow</option><option value="1" selected>normal</option><option value="3">fast</option>
  </select></label>
  <label><input type="checkbox" data-role="loop"> Loop</label>
</div>
<script>
(() => {
  const epochs = %(epochs)s;
  const scale = %(scale)r;
  const tick = %(tick)d;
  const root = document.querySelector('.st-key-%(scope)s .fitlab-player');
  const range = root.querySelector('[data-role="epoch"]');
  const button = root.querySelector('[data-act="play"]');
  const readout = root.querySelector('[data-role="readout"]');
  const speed = root.querySelector('[data-role="speed"]');
  const loop = root.querySelector('[data-role="loop"]');
  const pictures = () => document.querySelectorAll('.st-key-%(scope)s_pictures .vega-bindings input[type="range"]');
  // The recorded frame each picture shows for an epoch: the charts' own rule.
  const shown = (epoch) => epochs[Math.min(Math.max(Math.round(epoch * scale), 0), epochs.length - 1)];
  // One timer per player (the first screen's and the tab's), kept across redraws.
  const timers = window.fitlabPlayers = window.fitlabPlayers || {};
  clearInterval(timers['%(scope)s']);
  timers['%(scope)s'] = null;
  const show = (epoch) => {
    range.value = epoch;
    for (const input of pictures()) {
      input.value = epoch;
      input.dispatchEvent(new Event('input', {bubbles: true}));
    }
    readout.textContent = 'epoch ' + shown(epoch) + ' of ' + %(last)d;
  };
  const stop = (label) => {
    clearInterval(timers['%(scope)s']);
    timers['%(scope)s'] = null;
    button.textContent = label || '▶ Play';
  };
  const next = () => epochs.find((e) => e > Number(range.value));
  const start = () => {
    if (next() === undefined) show(epochs[0]);   // at the end: from the start
    button.textContent = 'Pause';
    clearInterval(timers['%(scope)s']);
    timers['%(scope)s'] = setInterval(() => {
      const epoch = next();
      if (epoch !== undefined) { show(epoch); return; }
      if (loop.checked) { show(epochs[0]); return; }
      stop('▶ Replay');
      readout.textContent = 'epoch ' + %(last)d + ' of ' + %(last)d + ': the end';
    }, tick / Number(speed.value));
  };
  button.addEventListener('click', () => (timers['%(scope)s'] ? stop() : start()));
  speed.addEventListener('change', () => { if (timers['%(scope)s']) start(); });
  range.addEventListener('input', () => { if (timers['%(scope)s']) stop(); show(Number(range.value)); });
})();
</script>
"""
PLAY_SECONDS = 6.0   # a whole run at normal speed, at any number of frames
# The first screen's pictures (the Training tab's glance), and their height:
# with the title, the intro and the tab bar they end above the fold of a
# 1280×720 projector.
GLANCE = ("loss", "predictions")
GLANCE_HEIGHT = 125
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
                     "last": last, "step": step, "scope": scope}


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
                    st.vega_lite_chart({**panels[name], "height": GLANCE_HEIGHT}, width="stretch")
