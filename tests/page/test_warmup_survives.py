"""The server's warm-up survives the lesson's worker dying: no exception on
its thread (the server's log stayed clean), and the page's first view of the
lesson runs the script again in a fresh worker."""

from __future__ import annotations

import os
import threading

import pytest

import fitlab
from fitlab.serving import isolation
from ui import warmup


@pytest.mark.slow  # the warm-up starts a worker process
def test_warm_up_survives_its_worker_dying(empty_cache, monkeypatch):
    from ui.tabs.failure import script

    deaths = []

    def worker_dies(*args, **kwargs):  # the worker exits mid-call, as when killed
        deaths.append(args)
        return isolation.run_isolated(os._exit, 9)

    monkeypatch.setattr(script, "run_isolated", worker_dies)
    monkeypatch.setattr(warmup, "_page_ran", threading.Event())
    monkeypatch.setattr(warmup, "LESSON_AFTER_PAGE_SECONDS", 0.0)
    failures = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    warmup.page_ran()
    thread = threading.Thread(target=warmup.warm, name=warmup.THREAD_NAME)
    thread.start()
    thread.join(timeout=180)
    assert not thread.is_alive() and failures == [] and len(deaths) == 1
    # Not cached: the lesson's first view runs the script, in a fresh worker.
    monkeypatch.setattr(script, "run_isolated", isolation.run_isolated)
    explained = script.cached_explained(fitlab.Config(detach=False))
    assert explained.report.status == "inplace_error"
