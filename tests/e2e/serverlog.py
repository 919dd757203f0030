"""Reading the browser suite's server log for what a person running the
server would worry about: tracebacks, Streamlit's warnings and errors, and
Python warnings; and a server whose whole log must be free of them."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from tools.server import free_port, start_server, stop_server, wait_healthy

# A log line as the suite's server writes it: time, level, logger, message.
_LEVEL = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ")
_STACK = re.compile(r"^(Traceback|Stack) \(most recent call last\)")
_PY_WARNING = re.compile(r":\d+: \w*Warning: ")


def log_problems(text: str) -> list[str]:
    """The lines of a server log that show a traceback, a logged warning or
    error, or a Python warning."""
    return [line for line in text.splitlines()
            if _LEVEL.match(line) or _STACK.match(line) or _PY_WARNING.search(line)]


class ServerLog:
    """The server's output file, read from a given point."""

    def __init__(self, path: Path):
        self.path = path

    def size(self) -> int:
        """Characters written so far (0 before the server starts)."""
        return len(self.path.read_text()) if self.path.exists() else 0

    def read_from(self, start: int) -> str:
        """What the server wrote after `start`."""
        return self.path.read_text()[start:] if self.path.exists() else ""


@contextlib.contextmanager
def clean_server(log_path: Path) -> Iterator[str]:
    """`streamlit run` on a free port, writing to `log_path`: its base URL once
    healthy; stopped on exit, when its whole log must be free of tracebacks
    and warnings."""
    port = free_port()
    with log_path.open("w") as log:
        process = start_server(port, log)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, process)
            yield url
        finally:
            stop_server(process)
    problems = log_problems(log_path.read_text())
    assert not problems, "the server's log has tracebacks or warnings:\n" + "\n".join(problems)
