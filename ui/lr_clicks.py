"""The learning rate's + and −, one step on the 1, 2, 5 grid per click,
however quick the clicks.

The box's buttons add or take away its step in the browser, and the script
then moves the value to the grid (ui.sidebar.lr_after_step), drawing the
box anew with the next step. A click before that run has come back steps
from a value the script is replacing, with a step that is no longer the
box's: five quick clicks on + ended at 0.1, 0.06, 0.06, 0.5, 0.5. So the
browser holds each click of these two buttons until the box shows the
grid's value of the click before, then lets it through: every click is
one step, in order, none lost.
"""

from __future__ import annotations

import streamlit as st

# The longest a click waits for the run of the one before (a run that never
# comes back must not swallow the clicks after it).
PATIENCE_MS = 20_000

_SCRIPT = """<script>
(() => {
  if (window.fitlabLrClicks) return;
  window.fitlabLrClicks = true;
  const BUTTONS = '.st-key-lr [data-testid="stNumberInputStepUp"], .st-key-lr [data-testid="stNumberInputStepDown"]';
  const QUIET_MS = 1500, PATIENCE_MS = __PATIENCE__;
  const held = [];          // the clicks waiting for the run of the one before
  let busySince = null;     // when the last click let through started its run
  let letThrough = false;
  let sawRunning = false;   // the run of the click let through has started
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(() => {
    if (app.getAttribute("data-test-script-state") === "running") sawRunning = true;
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
  const onGrid = (v) => {   // 1, 2 or 5 × 10^k, or a bound
    if (!(v > 0)) return false;
    const m = Number((v / 10 ** Math.floor(Math.log10(v) + 1e-9)).toPrecision(6));
    return m === 1 || m === 2 || m === 5 || v === 10 || v === 1e-6;
  };
  const settled = () => {
    const box = document.querySelector('.st-key-lr input');
    // A run drawn in one render shows no "running": then a quiet moment counts.
    const ran = sawRunning || Date.now() - busySince > QUIET_MS;
    return box && onGrid(Number(box.value)) && ran && app.getAttribute("data-test-script-state") === "notRunning";
  };
  const release = () => {
    if (busySince !== null && !settled() && Date.now() - busySince < PATIENCE_MS) return;
    busySince = null;
    const button = held.shift();
    if (!button) return;
    busySince = Date.now();
    sawRunning = false;
    letThrough = true;
    button.click();
    letThrough = false;
  };
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest(BUTTONS);
    if (!button || letThrough) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    held.push(button);
    release();
  }, true);
  setInterval(release, 50);
})();
</script>""".replace("__PATIENCE__", str(PATIENCE_MS))


def one_step_per_click() -> None:
    """Hold quick clicks of the learning rate's + and − in the browser, one
    at a time (see the module's docstring). Call once per run."""
    st.sidebar.html(_SCRIPT, unsafe_allow_javascript=True)
