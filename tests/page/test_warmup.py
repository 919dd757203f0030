"""The server's warm-up: a fresh server's first visitors find the default run
trained, and, a little after a first page has run, the lesson's run and the
default run's student-versus-teacher tables too."""

import ast
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fitlab
from fitlab import Config
from ui import warmup
from ui.state import run_cache
from ui.words import SIDEBAR_FIELDS


@pytest.mark.slow  # the warm-up starts a worker process
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
    from fitlab.serving.isolation import run_isolated
    from ui.tabs.failure.script import cached_explained

    monkeypatch.setattr("ui.tabs.failure.script.run_isolated",
                        lambda *a, **k: pytest.fail("the lesson's script ran again") or run_isolated(*a, **k))
    assert cached_explained(Config(detach=False)).report.status == "inplace_error"


# In a fresh interpreter: the keys of the widgets the page has drawn when it
# first imports torch.
_FRAME_BEFORE_TORCH = r"""
import sys
import streamlit as st
from streamlit.testing.v1 import AppTest

seen = []

class NoteTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and not seen:
            seen.append(sorted(st.session_state))  # the widgets drawn so far
        return None

sys.meta_path.insert(0, NoteTorch())
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
assert not at.exception, at.exception
print(seen)
"""


@pytest.mark.slow  # a fresh interpreter
def test_the_pages_frame_is_drawn_before_it_imports_torch():
    """A fresh server's first page sends its title, decoder and sidebar before
    it needs torch (the tabs import it), so the browser draws them while the
    warm-up still imports torch."""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", _FRAME_BEFORE_TORCH, str(root / "streamlit_app.py")], cwd=root,
                         capture_output=True, text=True, timeout=240, check=True).stdout
    (keys,) = ast.literal_eval(out.strip().splitlines()[-1])
    assert {*SIDEBAR_FIELDS, "decode_message"} <= set(keys), keys


def test_the_warm_up_imports_every_module_the_page_imports():
    tree = ast.parse((Path(__file__).parents[2] / "streamlit_app.py").read_text())
    page = {node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module.startswith("ui.") and node.module != "ui.warmup"}
    assert page and page == set(warmup.PAGE_MODULES)


def test_the_server_hands_the_interpreter_over_within_half_a_millisecond_and_stops_its_workers(monkeypatch):
    import asyncio
    import concurrent.futures

    from fitlab.serving import isolation

    started, closed = [], []
    monkeypatch.setattr(warmup, "warm", lambda: started.append(True))
    # Recorded, not done: closed for good, this process's pool would refuse the later tests' calls.
    monkeypatch.setattr(isolation, "close_workers", lambda: closed.append(True))
    before = sys.getswitchinterval()

    async def serve():
        async with warmup.warm_up(None):
            return sys.getswitchinterval()

    try:
        # In a thread of its own: a browser test before it in this worker may leave Playwright's loop running here.
        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            interval = thread.submit(asyncio.run, serve()).result()
        assert interval == pytest.approx(warmup.SWITCH_INTERVAL) and warmup.SWITCH_INTERVAL < before
        time.sleep(0.1)
        assert started == [True] and closed == [True]
    finally:
        sys.setswitchinterval(before)
