"""What the explain tests share: `forked_python` and `forked_explain`, `python SCRIPT` and
`python -m fitlab.explain ARGS` run as python runs them without a fresh interpreter and
`import torch` each (tests/explain/forked_python.py says what such a run is and is not)."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 300
ROOT = Path(__file__).resolve().parents[2]
# Read by python or torch as they start: the fork's are the server's, so a run must not change them.
STARTUP = re.compile(r"PYTHON(?!PATH$|DONTWRITEBYTECODE$)|LANG$|LC_|OMP_|MKL_|TORCH")


@pytest.fixture(scope="session")
def _fork_server(tmp_path_factory):
    """run(argv, cwd, env) -> CompletedProcess of `python *argv` in cwd, its environment the
    session's as it started updated by env: one forked child per run, from one server per worker
    that imported torch and fitlab.explain's modules (and never runs a program itself)."""
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forked_python.py"))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    started = dict(os.environ)
    outputs = tmp_path_factory.mktemp("forked_python")
    count = 0

    def run(argv: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
        nonlocal count
        count += 1
        changed = sorted(k for k, v in (env or {}).items() if STARTUP.match(k) and v != started.get(k))
        assert not changed, f"read at start-up, so a real process's: {changed}"
        env = {**started, **(env or {})}
        out, err = outputs / f"{count}.out", outputs / f"{count}.err"
        server.stdin.write(json.dumps([list(map(str, argv)), str(cwd), env, str(out), str(err)]) + "\n")
        server.stdin.flush()
        # As subprocess.run(timeout=300) did: a run that hangs fails its test, not the suite.
        if not select.select([server.stdout], [], [], TIMEOUT)[0]:
            os.killpg(server.pid, signal.SIGKILL)  # the server and the run's child
            pytest.fail(f"python {' '.join(map(str, argv))} ran past {TIMEOUT} s")
        code = int(server.stdout.readline())
        return subprocess.CompletedProcess([sys.executable, *map(str, argv)], code, out.read_text(), err.read_text())

    yield run
    server.stdin.close()
    server.wait(timeout=60)


@pytest.fixture(scope="session")
def forked_python(_fork_server):
    """run(*argv, cwd) -> CompletedProcess of `python *argv` in cwd (a fork): SCRIPT ARGS or -m MODULE ARGS."""
    return lambda *argv, cwd: _fork_server(argv, cwd)


@pytest.fixture(scope="session")
def forked_explain(_fork_server):
    """run(*args, cwd, env=None) -> CompletedProcess of `python -m fitlab.explain *args` in cwd
    (a fork), with PYTHONPATH the project's, as the tests give the real CLI, and env's variables."""
    return lambda *args, cwd, env=None: _fork_server(["-m", "fitlab.explain", *args], cwd,
                                                     {"PYTHONPATH": str(ROOT), **(env or {})})
