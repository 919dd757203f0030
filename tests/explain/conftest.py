"""What the explain tests share: `forked_python`, scripts run as python runs them without a
fresh interpreter and `import torch` each (tests/explain/forked_python.py)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 300


@pytest.fixture(scope="session")
def forked_python(tmp_path_factory):
    """run(script, cwd) -> CompletedProcess of `python script` in cwd: one forked child per
    script, from one server per worker that imported torch (and never runs a script itself)."""
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forked_python.py"))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    outputs = tmp_path_factory.mktemp("forked_python")
    count = 0

    def run(script: Path, cwd: Path) -> subprocess.CompletedProcess:
        nonlocal count
        count += 1
        out, err = outputs / f"{count}.out", outputs / f"{count}.err"
        server.stdin.write(json.dumps([str(script), str(cwd), str(out), str(err)]) + "\n")
        server.stdin.flush()
        # As subprocess.run(timeout=300) did: a script that hangs fails its test, not the suite.
        if not select.select([server.stdout], [], [], TIMEOUT)[0]:
            os.killpg(server.pid, signal.SIGKILL)  # the server and the script's child
            pytest.fail(f"{script} ran past {TIMEOUT} s")
        code = int(server.stdout.readline())
        return subprocess.CompletedProcess([str(script)], code, out.read_text(), err.read_text())

    yield run
    server.stdin.close()
    server.wait(timeout=60)
