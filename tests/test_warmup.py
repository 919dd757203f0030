"""The server's warm-up: a fresh server's first visitors find the default run
and the lesson's run already trained."""

import pytest
import streamlit as st

import fitlab
from fitlab import Config
from ui.results import run_cache
from ui.warmup import warm


@pytest.fixture
def empty_cache():
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_warm_up_puts_the_default_and_the_lesson_runs_in_the_run_cache(empty_cache, monkeypatch):
    trained = []
    real = fitlab.train
    monkeypatch.setattr(fitlab, "train", lambda config, **kw: trained.append(config) or real(config, **kw))
    warm()
    assert trained == [Config(), Config(detach=False)]
    cache = run_cache()
    assert len(cache) == 2
    default = cache.get(Config(), lambda config: pytest.fail(f"{config} trained again"))
    lesson = cache.get(Config(detach=False), lambda config: pytest.fail(f"{config} trained again"))
    assert default.error is None and default.history.epoch.iloc[-1] == Config().epochs
    assert lesson.error is not None and lesson.error.type == "RuntimeError"
