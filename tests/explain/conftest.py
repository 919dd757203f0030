"""What the explain tests share: `forked_python`, scripts run as python runs them without a
fresh interpreter and `import torch` each (tests/explain/forked_python.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def forked_python(tmp_path_factory):
    """run(script, cwd) -> CompletedProcess of `python script` in cwd: one forked child per
    script, from one server per worker that imported torch (and never runs a script itself)."""
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forked_python.py"))],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    outputs = tmp_path_factory.mktemp("forked_python")
    count = 0

    def run(script: Path, cwd: Path) -> subprocess.CompletedProcess:
        nonlocal count
        count += 1
        out, err = outputs / f"{count}.out", outputs / f"{count}.err"
        server.stdin.write(json.dumps([str(script), str(cwd), str(out), str(err)]) + "\n")
        server.stdin.flush()
        code = int(server.stdout.readline())
        return subprocess.CompletedProcess([str(script)], code, out.read_text(), err.read_text())

    yield run
    server.stdin.close()
    server.wait(timeout=60)
