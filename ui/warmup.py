"""Warming up a fresh server, so its first visitor does not wait for it.

`streamlit run streamlit_app.py` serves the page through `st.App`, whose
lifespan starts `warm` on a thread as the server starts: the page's imports
(torch, scipy, altair, pandas), then the default run into the run cache. A
visitor who comes meanwhile joins it (the import lock, the run cache's one
training per config). A few seconds after a first page has run (torch's first
optimiser step imports torch._dynamo, which holds the interpreter while the
browser still draws that page), the lesson's run, its script in a worker
process (which starts the worker) and the default run's student tables.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import threading
import time

# The modules streamlit_app.py imports, which import everything a default page needs.
PAGE_MODULES = ("ui.browser", "ui.decode", "ui.phone", "ui.share", "ui.sidebar", "ui.state", "ui.words",
                "ui.tabs.compare", "ui.tabs.failure", "ui.tabs.gradients", "ui.tabs.student",
                "ui.tabs.sweep", "ui.tabs.training", "ui.tabs.watch")
THREAD_NAME = "fitlab-warm-up"
LESSON_AFTER_PAGE_SECONDS = 5.0
STUDENT_VIEWS = ("distances", "test_predictions", "loss_slices")
# Python's default is 5 ms: the event loop gives the interpreter up at every
# socket call and waited that long to get it back from each drawing page run.
SWITCH_INTERVAL = 0.0005
_page_ran = threading.Event()


@contextlib.asynccontextmanager
async def warm_up(_app):
    """st.App lifespan: the server's switch interval (SWITCH_INTERVAL), then
    start the warm-up, and serve without waiting for it; as the server
    stops, stop its worker processes."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    threading.Thread(target=warm, name=THREAD_NAME, daemon=True).start()
    yield
    isolation = sys.modules.get("fitlab.serving.isolation")
    if isolation is not None:  # never imported: no workers to stop
        isolation.close_workers()


def warm() -> None:
    """Import the page's modules and put the default run in the run cache;
    a little after a first page has run, the lesson's run and script too,
    and the default run's student-versus-teacher tables."""
    for name in PAGE_MODULES:
        importlib.import_module(name)
    import fitlab
    from fitlab.serving.isolation import WorkerDied
    from ui.state import run_cache
    from ui.tabs.failure.script import cached_explained

    # The run cache is an st.cache_resource: reached from this thread, which
    # runs no page, Streamlit logs "missing ScriptRunContext", expected here.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: record.threadName != THREAD_NAME)
    default = run_cache().get(fitlab.Config(), fitlab.train)
    _page_ran.wait()
    time.sleep(LESSON_AFTER_PAGE_SECONDS)  # the browser is drawing that page
    run_cache().get(fitlab.Config(detach=False), fitlab.train)
    try:
        cached_explained(fitlab.Config(detach=False))
    except (WorkerDied, TimeoutError):
        pass  # not cached: the page's first view runs it
    for view in STUDENT_VIEWS:  # the first matching of hidden units also imports scipy's solver
        getattr(default, view)


def page_ran() -> None:
    """The page calls this at the end of every run: the warm-up may go on
    to the lesson's run."""
    _page_ran.set()
