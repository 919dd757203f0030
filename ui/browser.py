"""The page's one script in the browser: one history entry per deliberate
change, so Back returns to the previous screen, and a stopped run's bar.

Streamlit 1.67 writes a bound widget's change to the URL with replaceState,
so Back left the app, and pushes the script's own writes one by one, so Back
after a sweep cell's click showed its new lr with the old seed. Here a
widget's replace becomes a push and the same run's further writes replace
that entry. Back and Forward are Streamlit's own (a rerun with the entry's
URL); the page's own links go the same way, keeping the session and its
Compare runs. Streamlit's Stop ends the script where it is: the browser
rewrites a training bar left on an idle page (a finished run removes its bar).
"""

from __future__ import annotations

import streamlit as st

_SCRIPT = """<script>
(() => {
  if (window.fitlabHistory) return;
  window.fitlabHistory = true;
  const push = history.pushState.bind(history), replace = history.replaceState.bind(history);
  let pushed = false;  // this run's change has its entry: the script's further writes correct it
  history.replaceState = (state, title, url) => {
    if (typeof url === "string" && /^https?:/.test(url) && url !== location.href) {  // a widget's change
      pushed = true;
      return push(state, title, url);
    }
    return replace(state, title, url);
  };
  history.pushState = (state, title, url) => {
    if (pushed) return replace(state, title, url);  // the same change: its entry
    pushed = true;
    return push(state, title, url);
  };
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(() => {  // a run ended: the change is settled, and a bar left is a stopped run's
    if (app.getAttribute("data-test-script-state") !== "notRunning") return;
    pushed = false;
    for (const text of document.querySelectorAll('[class*="st-key-training_progress"] [data-testid="stProgress"] p')) {
      const at = /^Training: epoch (\\d+) of (\\d+)$/.exec(text.textContent);
      if (at) text.textContent = "Stopped at epoch " + at[1] + " of " + at[2] + ". A stopped run is not kept: "
        + "rerun the page (R) to train it again, or lower Epochs (Advanced) for a shorter run.";
    }
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
  // The page's own links (st.html's sanitizer drops their target) become an entry, run as Back runs one.
  document.addEventListener("click", (event) => {
    // composedPath: st.html may draw in a shadow root, which hides the link from event.target
    const link = event.composedPath().find((node) => node.matches && node.matches('a[href^="?"]'));
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    push({}, "", link.href);
    window.dispatchEvent(new PopStateEvent("popstate", {state: {}}));
  }, true);
  document.addEventListener("pointerdown", (event) => {  // a button's or a chart's click: a new change
    if (event.target.closest('[data-testid="stButton"], [data-testid="stVegaLiteChart"]')) pushed = false;
  }, true);
})();
</script>"""


def browser_script() -> None:
    """Install the page's script (see the module's docstring). Call once per
    run; the browser installs it once."""
    st.sidebar.html(_SCRIPT, unsafe_allow_javascript=True)
