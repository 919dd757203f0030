"""The server's warm-up: a fresh server's first visitors find the default run
trained, and, a little after a first page has run, the lesson's run and the
default run's student-versus-teacher tables too."""

import threading
import time

import pytest

import fitlab
from fitlab import Config
from ui import warmup
from ui.state import run_cache


def test_warm_up_trains_the_default_run_then_the_lessons_once_a_page_is_drawn(empty_cache, monkeypatch):
    trained = []
    real = fitlab.train
    monkeypatch.setattr(fitlab, "train", lambda config, **kw: trained.append(config) or real(config, **kw))
    monkeypatch.setattr(warmup, "_page_ran", threading.Event())
    monkeypatch.setattr(warmup, "LESSON_AFTER_PAGE_SECONDS", 0.0)
    thread = threading.Thread(target=warmup.warm)
    thread.start()
    cache = run_cache()
    deadline = time.monotonic() + 60
    while len(cache) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for the default run, not a wait for the result
    # The lesson's run waits for a page: only the default run is trained meanwhile.
    thread.join(timeout=1)
    assert thread.is_alive() and trained == [Config()]
    warmup.page_ran()
    thread.join(timeout=60)
    assert not thread.is_alive() and trained == [Config(), Config(detach=False)]
    assert len(cache) == 2
    default = cache.get(Config(), lambda config: pytest.fail(f"{config} trained again"))
    lesson = cache.get(Config(detach=False), lambda config: pytest.fail(f"{config} trained again"))
    assert default.error is None and default.history.epoch.iloc[-1] == Config().epochs
    assert set(warmup.STUDENT_VIEWS) <= set(vars(default.student_teacher))  # the tab's tables are ready
    assert lesson.error is not None and lesson.error.type == "RuntimeError"
    from fitlab.isolation import run_isolated
    from ui.tabs.failure.script import cached_explained

    monkeypatch.setattr("ui.tabs.failure.script.run_isolated",
                        lambda *a, **k: pytest.fail("the lesson's script ran again") or run_isolated(*a, **k))
    assert cached_explained(Config(detach=False)).report.status == "inplace_error"
