"""Take the README's pictures of the comparison view with headless chromium.

    python docs/take_screenshots.py

Starts `streamlit run streamlit_app.py` on a free local port, makes three
runs through the sidebar (defaults, a wider net, a higher learning rate),
photographs the "Compare runs" and "Student versus teacher" sections into
docs/, and stops the server.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_listening(port: int, timeout: float = 90) -> None:
    """Block until the server accepts connections."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise TimeoutError(f"streamlit did not listen on port {port}")


def wait_for_run(page) -> None:
    """Wait until the script has rerun and the page has settled."""
    page.wait_for_timeout(1000)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && document.querySelectorAll('[data-stale=\"true\"]').length === 0",
        timeout=600_000)
    page.wait_for_timeout(1500)


def nudge_slider(page, label: str, presses: int) -> None:
    """Move a sidebar slider by keyboard, as a user would."""
    page.get_by_role("slider", name=label).focus()
    for _ in range(presses):
        page.keyboard.press("ArrowRight")
    wait_for_run(page)


def set_number(page, label: str, value: str) -> None:
    """Type a value into a sidebar number input."""
    box = page.get_by_label(label)
    box.fill(value)
    box.press("Enter")
    wait_for_run(page)


def section(page, heading: str, last_text: str, path: Path) -> None:
    """Photograph from a section's heading down to an element in it."""
    top = page.get_by_role("heading", name=heading).bounding_box()
    bottom = page.get_by_text(last_text).first.bounding_box()
    clip = {"x": top["x"] - 16, "y": top["y"] - 8, "width": 1100,
            "height": bottom["y"] + bottom["height"] - top["y"] + 24}
    page.screenshot(path=str(path), clip=clip)


def main() -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_listening(port)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            # Tall enough that nothing scrolls: Streamlit scrolls an inner
            # container, which bounding boxes and clips do not follow.
            page = browser.new_page(viewport={"width": 1400, "height": 6000})
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_role("heading", name="Compare runs").wait_for(timeout=600_000)
            wait_for_run(page)
            nudge_slider(page, "Hidden width", 11)          # width 16
            set_number(page, "Learning rate", "0.05")       # width 16, lr 0.05
            page.get_by_text("Log scale").last.click()
            wait_for_run(page)
            section(page, "Compare runs", "Download their parameters", ROOT / "docs" / "compare-runs.png")
            section(page, "Student versus teacher", "At t = 1 the loss is zero",
                    ROOT / "docs" / "student-vs-teacher.png")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
