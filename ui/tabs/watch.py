"""Watch it learn: the run's pictures at one epoch, a range input to scrub
through the recorded frames and a play button, all in the browser.

The chart is one Vega-Lite spec (fitlab.watch_charts) whose epoch parameter
is bound to a range input; Vega redraws every picture when it moves, and the
script does not rerun. Vega-Lite has no timer, so play is a few lines of
JavaScript beside the chart that move that same input, frame by frame.
"""

from __future__ import annotations

import json

import streamlit as st

from fitlab.run import Run
from fitlab.watch_charts import DIAGRAM_MAX_WIDTH, HEATMAP_MAX_UNITS, watch_spec
from ui.charts import spec

# Moves the chart's range input through the recorded epochs. Only this
# file's own code and numbers from the run go in: nothing a user typed.
PLAYER = """
<style>
  /* The epoch input above the pictures it moves, not under a tall chart. */
  .st-key-watch_chart .vega-embed { display: flex; flex-direction: column; }
  .st-key-watch_chart .vega-bindings { order: -1; margin-bottom: .5rem; }
  .st-key-watch_chart .vega-bindings input[type="range"] { width: 24rem; }
</style>
<div class="fitlab-player" style="display:flex;gap:.5rem;align-items:center">
  <button type="button" data-act="play" style="min-width:6rem">▶ Play</button>
  <button type="button" data-act="start">⏮ Start</button>
  <span data-role="status" style="opacity:.7"></span>
</div>
<script>
(() => {
  const epochs = %(epochs)s;
  const tick = %(tick)d;
  const root = document.querySelector('.fitlab-player');
  const slider = () => document.querySelector('.st-key-watch_chart input[type="range"]');
  const button = root.querySelector('[data-act="play"]');
  const status = root.querySelector('[data-role="status"]');
  if (window.fitlabPlayer) clearInterval(window.fitlabPlayer);
  window.fitlabPlayer = null;
  const show = (epoch) => {
    const input = slider();
    if (!input) return false;
    input.value = epoch;
    input.dispatchEvent(new Event('input', {bubbles: true}));
    status.textContent = 'epoch ' + epoch;
    return true;
  };
  const stop = () => {
    clearInterval(window.fitlabPlayer);
    window.fitlabPlayer = null;
    button.textContent = '▶ Play';
  };
  const nextIndex = () => {
    const now = Number(slider() ? slider().value : epochs[epochs.length - 1]);
    return epochs.findIndex((e) => e > now);
  };
  button.addEventListener('click', () => {
    if (window.fitlabPlayer) { stop(); return; }
    if (nextIndex() < 0) show(epochs[0]);   // at the end: play from the start
    button.textContent = '⏸ Pause';
    window.fitlabPlayer = setInterval(() => {
      const i = nextIndex();
      if (i < 0 || !show(epochs[i])) stop();
    }, tick);
  });
  root.querySelector('[data-act="start"]').addEventListener('click', () => { stop(); show(epochs[0]); });
})();
</script>
"""
PLAY_SECONDS = 6.0   # a whole run, at any number of frames
MIN_TICK_MS = 40     # about the time Vega takes to redraw every picture


def player_html(run: Run) -> str:
    """The play and start buttons for this run's recorded epochs."""
    epochs = [int(e) for e in run.frames.epochs]
    tick = max(MIN_TICK_MS, int(1000 * PLAY_SECONDS / max(1, len(epochs) - 1)))
    return PLAYER % {"epochs": json.dumps(epochs), "tick": tick}


def watch_note(run: Run) -> str:
    """How to use the scrubbed pictures, and what was recorded, in words."""
    frames, config = run.frames, run.config
    n = len(frames.epochs)
    where = "every epoch" if n == config.epochs + 1 else f"{n} evenly spaced epochs (the nearest one is shown)"
    notes = [f"Drag the epoch slider under the pictures, or press Play: every picture moves to that "
             f"epoch in your browser, nothing is recomputed. The student was recorded at {where}; "
             f"epoch 0 is the fresh student. Weights and biases share one colour scale, red below 0, "
             f"blue above, white at 0, the same for teacher and student: equal colours, equal values."]
    if config.width > HEATMAP_MAX_UNITS:
        notes.append(f"At width {config.width} each heatmap shows its matrix's top-left "
                     f"{HEATMAP_MAX_UNITS} × {HEATMAP_MAX_UNITS} corner.")
    if config.width > DIAGRAM_MAX_WIDTH:
        notes.append(f"The net's diagram is drawn for widths up to {DIAGRAM_MAX_WIDTH}.")
    return " ".join(notes)


def watch_section(run: Run, log_scale: bool) -> None:
    """The scrubbable pictures of a finished run, with play and pause."""
    st.subheader("Watch it learn")
    st.caption(watch_note(run))
    st.html(player_html(run), unsafe_allow_javascript=True)
    with st.container(key="watch_chart"):  # a stable handle for the player and the browser tests
        st.vega_lite_chart(spec(watch_spec, (run.config, log_scale), run, log_scale), width="content")
