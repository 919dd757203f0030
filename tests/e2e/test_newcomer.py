"""A newcomer's two installs, checked in what they installed and nothing else (.ci/run).

.ci/run clones main, follows the README's set-up in a fresh venv (requirements.txt alone)
and, in another, `python -m pip install .` beside torch; it hands both venvs here through
FITLAB_NEWCOMER_APP (the clone, its venv in .venv) and FITLAB_NEWCOMER_EXPLAIN (a venv).
The page is started the README's way, `streamlit run streamlit_app.py` with the venv's
`bin` first on PATH (as `. .venv/bin/activate` puts it), and driven in Chromium.
Outside that step (`-m newcomer`), pyproject's addopts leaves these tests out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tools.browsing import DRAWN_CHART, browser_page, click_detach, expect, open_page, open_tab, rerun_after
from tools.server import free_port, stop_server, wait_healthy

from .serverlog import log_problems

pytestmark = [pytest.mark.newcomer, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[1] / "explain" / "scripts" / "blog_reinit.py"


def _place(variable: str) -> Path:
    place = os.environ.get(variable)
    if not place:
        pytest.fail(f"{variable} is not set: this test checks the venvs .ci/run makes")
    return Path(place)


def _activated(venv: Path) -> dict:
    return {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}


@pytest.fixture(scope="module")
def newcomer_page(tmp_path_factory):
    """The clone's page, served from its own venv on 127.0.0.1: (URL, its log's path)."""
    clone = _place("FITLAB_NEWCOMER_APP")
    port, log_path = free_port(), tmp_path_factory.mktemp("newcomer") / "server.log"
    settings = {"STREAMLIT_SERVER_HEADLESS": "true", "STREAMLIT_SERVER_ADDRESS": "127.0.0.1",
                "STREAMLIT_SERVER_PORT": str(port), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with log_path.open("w") as log:
        server = subprocess.Popen(["streamlit", "run", "streamlit_app.py"], cwd=clone,
                                  env={**_activated(clone / ".venv"), **settings},
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, server)
            yield url, log_path
        finally:
            stop_server(server)


def test_the_readme_setup_draws_the_chart_the_lesson_and_the_fix_gallery(newcomer_page, browser):
    url, log_path = newcomer_page
    with browser_page(browser, timeout_ms=180_000, viewport={"width": 1400, "height": 1000}) as page:
        open_page(page, url)
        expect(page.locator(DRAWN_CHART)).to_be_visible()
        rerun_after(page, lambda: click_detach(page))
        script = page.locator(".st-key-marked_script pre", has_text="# The blog's script")
        expect(script).to_have_count(1)
        for mark in ("saved here", "written here", "backward fails here"):
            expect(script).to_contain_text(mark)
        open_tab(page, "Fix gallery", page.locator(".st-key-fix_gallery tbody tr").first)
        assert page.locator('[data-testid="stException"]').count() == 0
    assert log_problems(log_path.read_text()) == []


def _marked_line(path: Path, mark: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if f"# {mark}" in line)


def test_pip_install_dot_gives_a_fitlab_explain_that_names_the_write(tmp_path):
    venv = _place("FITLAB_NEWCOMER_EXPLAIN")
    script = Path(shutil.copy(SCRIPT, tmp_path / "train.py"))
    done = subprocess.run(["fitlab-explain", "train.py"], cwd=tmp_path, env=_activated(venv),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "modified by an inplace operation" in done.stderr  # python's traceback, as python prints it
    lines = done.stderr.splitlines()
    for where, mark in (("saved at", "saved-here"), ("written at", "written-here"), ("failed at", "failed-here")):
        named = f"{where} train.py:{_marked_line(script, mark)} "
        assert any(" ".join(line.split()).startswith(named) for line in lines), (named, done.stderr)
    assert any(line.startswith("Fix: ") for line in lines)
