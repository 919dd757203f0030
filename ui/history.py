"""The browser's history: one entry per deliberate change, so Back returns
to the previous screen.

Streamlit 1.67 writes a bound widget's change (a tab switch too: the open
tab is in the URL, ui/share.py) into the address bar with
history.replaceState (its frontend's updateUrlParam, given an absolute URL),
so a slider move or a ticked box replaced the entry and Back left the app;
a change the script makes to the URL (st.query_params, or session state of
a bound widget) arrives as page_info_changed and is pushed (a path, not an
absolute URL), but replaced while Back or Forward reruns the page.

A sweep cell's click sets several bound widgets at once, and the script
wrote each as it drew it: one push per setting (lr, then seed), so Back
showed the new lr with the old seed, a state half applied.

So the page turns a widget's replace into a push, and any further write
of the script in the same run into a replace of that entry: one change,
one entry, holding what the person chose. Back and Forward are Streamlit's
own: they rerun the page with the entry's URL, which the widgets read.
The page's own links go the same way, so that they keep the session (a
reload would start a new one, and Compare's runs would be gone).
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
    // A bound widget's change: Streamlit gives it as an absolute URL.
    if (typeof url === "string" && /^https?:/.test(url) && url !== location.href) {
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
  // A run that ended settles the change; a button's or a chart's click starts a new one.
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(() => {
    if (app.getAttribute("data-test-script-state") === "notRunning") pushed = false;
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
  // The page's own links (a query on this page; st.html's sanitizer drops their target) would reload it
  // and start a new session, losing its runs: they become an entry, which
  // Streamlit runs as it runs Back and Forward, in the same session.
  document.addEventListener("click", (event) => {
    // composedPath: st.html may draw in a shadow root, which hides the link from event.target
    const link = event.composedPath().find((node) => node.matches && node.matches('a[href^="?"]'));
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    push({}, "", link.href);
    window.dispatchEvent(new PopStateEvent("popstate", {state: {}}));
  }, true);
  document.addEventListener("pointerdown", (event) => {
    if (event.target.closest('[data-testid="stButton"], [data-testid="stVegaLiteChart"]')) pushed = false;
  }, true);
})();
</script>"""


def one_entry_per_change() -> None:
    """Make each deliberate change one entry of the browser's history (see
    the module's docstring). Call once per run; the browser installs it once."""
    st.sidebar.html(_SCRIPT, unsafe_allow_javascript=True)
