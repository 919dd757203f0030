"""Warming up a fresh server, so its first visitor does not wait for it.

Otherwise a fresh server's first page run imports torch, scipy, altair and
pandas and trains the default settings before drawing its tabs.
`streamlit run streamlit_app.py` serves the page through `st.App`, whose
lifespan starts this warm-up on a background thread as the server starts: the
page's imports, then the default run into the run cache. The server answers at
once; a visitor who comes before the warm-up is done joins it (Python's import
lock, the run cache's one-training-per-config lock), one who comes later finds
the default run cached. The lesson's run (detach off) and a worker process
for its script (fitlab/serving/isolation.py) are warmed too, a few
seconds after a first page has run: torch's first optimiser step imports
torch._dynamo, which holds the interpreter, and while the browser still draws
that page its requests and messages need the interpreter too. Then the
lesson's script is run in the worker process, which starts it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import threading
import time

# The modules streamlit_app.py imports: importing them imports everything a
# default page needs (torch, scipy, altair, pandas).
PAGE_MODULES = ("ui.decode", "ui.history", "ui.phone", "ui.share", "ui.sidebar", "ui.state", "ui.words",
                "ui.tabs.compare", "ui.tabs.failure", "ui.tabs.gradients", "ui.tabs.student",
                "ui.tabs.sweep", "ui.tabs.training", "ui.tabs.watch")
THREAD_NAME = "fitlab-warm-up"
LESSON_AFTER_PAGE_SECONDS = 5.0
STUDENT_VIEWS = ("distances", "test_predictions", "loss_slices")
_page_ran = threading.Event()


# How long a thread may hold the interpreter while another waits for it
# (Python's default: 5 ms). The server's event loop gives the interpreter up
# at every socket call and waits this long to get it back from a page run
# that is drawing: with a class on a replica, a health check waited behind
# hundreds of such hand-offs (figures: docs/measurements/robustness.md).
SWITCH_INTERVAL = 0.0005


@contextlib.asynccontextmanager
async def warm_up(_app):
    """st.App lifespan: the server's switch interval (SWITCH_INTERVAL), then
    start the warm-up, and serve without waiting for it."""
    sys.setswitchinterval(SWITCH_INTERVAL)
    threading.Thread(target=warm, name=THREAD_NAME, daemon=True).start()
    yield


def warm() -> None:
    """Import the page's modules and put the default run in the run cache;
    a little after a first page has run, the lesson's run too, and the
    default run's student-versus-teacher tables."""
    for name in PAGE_MODULES:
        importlib.import_module(name)
    import fitlab
    from fitlab.serving import isolation
    from ui.state import run_cache

    _quiet_missing_context()
    default = run_cache().get(fitlab.Config(), fitlab.train)
    _page_ran.wait()
    time.sleep(LESSON_AFTER_PAGE_SECONDS)  # the browser is drawing that page
    run_cache().get(fitlab.Config(detach=False), fitlab.train)
    # The lesson's script runs in a worker process; one is enough to start
    # (each holds its own torch), the second starts if two replays meet.
    from fitlab.failure.explained import explained_blog
    from ui.tabs.failure.script import cached_explained

    isolation.warm(1, preload=(explained_blog.__module__,))
    # The default lesson's script through fitlab.explain, into the cache.
    try:
        cached_explained(fitlab.Config(detach=False))
    except (isolation.WorkerDied, TimeoutError):
        pass  # its worker was killed or hung: not cached, so the page's first view runs it
    # The default run's Student vs teacher tables; the first matching of
    # hidden units also imports scipy's solver.
    for view in STUDENT_VIEWS:
        getattr(default, view)


def page_ran() -> None:
    """The page calls this at the end of every run: the warm-up may go on
    to the lesson's run."""
    _page_ran.set()


def _quiet_missing_context() -> None:
    # The run cache is an st.cache_resource; reached from a thread that runs
    # no page, Streamlit logs "missing ScriptRunContext". Expected here, so the
    # server's log stays free of it.
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: record.threadName != THREAD_NAME)
