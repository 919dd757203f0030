"""A fitlab server for the browser suite, the load test and the benchmarks:
`streamlit run streamlit_app.py` as the README has it, headless on
127.0.0.1 and a free port, polled until healthy, and stopped."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, log, *options: str, address: str = "127.0.0.1",
                 script: str = "streamlit_app.py", root: Path = ROOT) -> subprocess.Popen:
    """`streamlit run` of `script` (the page) in the checkout `root` (default
    this one), headless on `address`:`port`, its output (each line with its
    level, so that a warning can be told from news) to `log` (None: this
    process's), with more `options` (e.g. "--server.fileWatcherType", "auto")."""
    return subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true",
         "--server.address", address, "--server.port", str(port), "--browser.gatherUsageStats", "false",
         "--logger.messageFormat", "%(asctime)s %(levelname)s %(name)s: %(message)s", *options],
        cwd=root, stdout=log, stderr=subprocess.STDOUT)


def health_seconds(url: str, timeout: float = 10) -> float | None:
    """Seconds /_stcore/health took to answer ok, None if it did not within `timeout`."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as answer:
            return time.perf_counter() - started if answer.status == 200 else None
    except OSError:
        return None


def wait_healthy(url: str, server: subprocess.Popen, seconds: float = 60) -> None:
    """Poll /_stcore/health until it answers ok; fail if the server dies."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {server.returncode}")
        if health_seconds(url, timeout=2) is not None:
            return
        # Polling interval, not a wait for the app; short, so that a first
        # page's timing starts when the server answers, not up to a poll later.
        time.sleep(0.05)
    raise RuntimeError(f"streamlit did not become healthy in {seconds} s")


def stop_server(server: subprocess.Popen, seconds: float = 15) -> None:
    """Ask the server to stop; kill it if it has not within `seconds`. Then
    wait (as long again at most) for the processes it had started, which may
    still write to its log as they end (multiprocessing's resource tracker)."""
    started = tree_pids(server.pid)[1:]
    server.terminate()
    try:
        server.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    deadline = time.monotonic() + seconds
    while any(running(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)


def tree_pids(pid: int) -> list[int]:
    """`pid` and all its descendants (Linux's /proc)."""
    pids, seen = [pid], []
    while pids:
        p = pids.pop()
        seen.append(p)
        try:
            pids += [int(c) for t in Path(f"/proc/{p}/task").iterdir()
                     for c in (t / "children").read_text().split()]
        except OSError:
            pass
    return seen


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
