"""`pip install .` is the explain tool alone: into a fresh virtual environment that already sees
this machine's torch (--system-site-packages), it adds fitlab and nothing of the page, leaves
torch as it was, and `fitlab-explain SCRIPT` behaves as `python -m fitlab.explain SCRIPT`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from .test_explain import SCRIPTS

pytestmark = pytest.mark.slow  # a venv, pip and its python

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=600,
                          check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("install")
    src = work / "src"
    src.mkdir()
    # A copy, so that the build writes nothing into the checkout.
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "fitlab", src / "fitlab", ignore=shutil.ignore_patterns("__pycache__"))
    env = work / "venv"
    made = run(sys.executable, "-m", "venv", "--system-site-packages", env, cwd=work)
    assert made.returncode == 0, made.stderr
    installed = run(env / "bin" / "python", "-m", "pip", "install", src, cwd=work)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return env


def site_packages(env: Path) -> Path:
    [site] = (env / "lib").glob("python3*/site-packages")
    return site


def test_install_adds_the_tool_without_the_page_and_keeps_torch(venv):
    names = {p.name.split("-")[0].lower() for p in site_packages(venv).iterdir()}
    assert "fitlab" in names
    assert not names & {"torch", "streamlit", "altair", "pandas", "scipy", "numpy"}
    assert not any(n.startswith("nvidia") for n in names)
    seen = run(venv / "bin" / "python", "-c", "import torch; print(torch.__version__, torch.__file__)", cwd=venv)
    version, path = seen.stdout.split()
    assert version == torch.__version__ and Path(path) == Path(torch.__file__)


def test_console_script_and_module_behave_the_same(venv, tmp_path):
    script = SCRIPTS / "exp_augassign.py"
    tool = run(venv / "bin" / "fitlab-explain", script, cwd=tmp_path)
    module = run(venv / "bin" / "python", "-m", "fitlab.explain", script, cwd=tmp_path)
    assert tool.returncode == module.returncode == 1
    assert tool.stderr == module.stderr
    assert "[torch.FloatTensor [4]] saved by ExpBackward0" in tool.stderr
    assert str(site_packages(venv)) not in tool.stderr and str(ROOT / "fitlab") not in tool.stderr


def test_a_torch_without_an_api_it_needs_is_one_line_and_exit_2(venv, tmp_path):
    missing = ("import sys, torch.autograd.graph as g; del g.increment_version; "
               "sys.argv = ['fitlab-explain', sys.argv[1]]; from fitlab.explain.__main__ import run; run()")
    proc = run(venv / "bin" / "python", "-c", missing, SCRIPTS / "exp_augassign.py", cwd=tmp_path)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("fitlab.explain: this torch (") and "increment_version" in line
