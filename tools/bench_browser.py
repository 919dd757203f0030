"""python -m tools.bench_browser: what a person waits for, in a real browser.

Starts a fresh `streamlit run` (127.0.0.1, a free port), drives Debian's
Chromium through Playwright, and times, each from the action to the drawing:

- fresh server: first page to its sidebar drawn (the page's frame, which
  needs no torch), and to the loss chart drawn;
- detach toggled back on, to a run already cached: to its loss chart drawn;
- the lesson for settings no one has opened yet (`?detach=false&lr=…`): to
  its marked script drawn, and to the whole lesson (down to the vivid
  example's table) with the app idle;
- then its *Fix gallery* tab opened: to the gallery's table drawn, every
  fix trained, and the app idle.

Every figure is also printed as a ratio against a baseline taken in the same
process and browser: reloading the cached default page to its chart drawn
(what the server and the browser cost with no training at all). The last
line is machine-readable: `browser first_frame=… first_chart=… detach_back=… lesson_script=…
lesson_complete=… gallery_tab=…`.

    python -m tools.bench_browser [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import time

from tools.browsing import DRAWN_CHART, browser_page, click_detach, open_page, rerun_after, timed_rerun, wait_idle
from tools.server import free_port, start_server, stop_server, wait_healthy

MARKED_SCRIPT = ".st-key-marked_script pre"      # the lesson's script, its marked lines highlighted
LESSON_DONE = ".st-key-vivid_example table"       # the lesson's last section, drawn
GALLERY_DONE = ".st-key-fix_gallery table"        # the fix gallery's tab, every fix trained
SIDEBAR_DRAWN = '[data-testid="stSidebar"] [data-testid="stSlider"]'   # the page's frame, drawn
WAITS = ("first_frame", "first_chart", "detach_back", "lesson_script", "lesson_complete", "gallery_tab")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def first_page(page, url: str) -> tuple[float, float]:
    """Seconds to the sidebar drawn, and to the loss chart drawn."""
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector(SIDEBAR_DRAWN)
    frame = time.perf_counter() - start
    page.wait_for_selector(DRAWN_CHART)
    chart = time.perf_counter() - start
    wait_idle(page)
    return frame, chart


def lesson(page, url: str, lr: float) -> tuple[float, float]:
    """Seconds to the marked script drawn, and to the whole lesson drawn and idle."""
    start = time.perf_counter()
    page.goto(f"{url}/?detach=false&lr={lr:g}")
    page.wait_for_selector(MARKED_SCRIPT)
    script = time.perf_counter() - start
    page.wait_for_selector(LESSON_DONE)
    wait_idle(page)
    return script, time.perf_counter() - start


def gallery_tab(page) -> float:
    """Seconds from a click on the lesson's Fix gallery tab to its table drawn and the app idle."""
    start = time.perf_counter()
    page.get_by_role("tab", name="Fix gallery").click()
    page.wait_for_selector(GALLERY_DONE)
    wait_idle(page)
    return time.perf_counter() - start


def one_round(browser, index: int) -> dict[str, float]:
    """A fresh server, then every wait once; lr differs per round so the
    lesson's settings are new to the server."""
    port = free_port()
    server = start_server(port, subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        times = {}
        with browser_page(browser, viewport={"width": 1400, "height": 1000}) as page:
            times["first_frame"], times["first_chart"] = first_page(page, url)
            _, times["baseline"] = first_page(page, url)   # reload: the run is cached
            open_page(page, url)
            rerun_after(page, lambda: click_detach(page))          # detach off: the lesson
            times["detach_back"], _ = timed_rerun(page, lambda: click_detach(page))
        with browser_page(browser, viewport={"width": 1400, "height": 1000}) as page:
            times["lesson_script"], times["lesson_complete"] = lesson(page, url, 0.03 + 0.01 * index)
            times["gallery_tab"] = gallery_tab(page)
        return times
    finally:
        stop_server(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    rounds = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=LAUNCH_ARGS)
        try:
            for i in range(args.rounds):
                rounds.append(one_round(browser, i))
                print(f"round {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in rounds[-1].items()),
                      flush=True)
        finally:
            browser.close()
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.rounds} rounds, and ratios to the "
          f"baseline (reload of the cached default page, {median['baseline']:.2f} s):")
    for key in WAITS:
        print(f"  {key:16s} {median[key]:6.2f} s  {median[key] / median['baseline']:5.1f}×")
    print("browser " + " ".join(f"{k}={median[k]:.2f}" for k in WAITS))


if __name__ == "__main__":
    main()
