"""python -m tools.bench_views: what views of one cached run cost.

A class opening the same link: the run is trained once (the run cache), and
each browser tab's page run then only draws it. This prints the time of one
view of an already-trained width-256 run (a fresh session, nothing of the
page built yet) and of eight such views (eight fresh sessions), and their
ratio: what eight tabs cost against one. Each view is an AppTest run of the
whole page, in this process, timed in CPU seconds of the process (the
script runs on AppTest's thread; other processes on a shared machine do not
count). AppTest's own scan of the installed packages for components, which a
server does once, is left out of every view.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import streamlit as st
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "streamlit_app.py")
QUERY = {"width": "256", "shared_repeats": "3", "n_train": "199", "batch_size": "199", "epochs": "445"}


def view(query: dict) -> float:
    """CPU seconds of one fresh session's page run on `query`."""
    at = AppTest.from_file(APP, default_timeout=300)
    for key, value in query.items():
        at.query_params[key] = value
    started = time.process_time()
    at.run()
    took = time.process_time() - started
    assert not at.exception, at.exception
    return took


def forget_views() -> None:
    """Forget what the page built from runs, keeping the runs themselves."""
    st.cache_data.clear()
    from ui import charts
    from ui.tabs import training

    charts.kept.clear()
    training.run_words.clear()
    training.parameter_tables_of.clear()


def skip_component_scan() -> None:
    """AppTest scans every installed package for components on each run;
    a server does it once."""
    from streamlit.components.v2 import component_manager

    component_manager.BidiComponentManager.discover_and_register_components = lambda self, *a, **k: None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=8)
    args = parser.parse_args()
    skip_component_scan()
    st.cache_resource.clear()
    forget_views()
    trained = view(QUERY)  # trains into the run cache
    forget_views()
    one = view(QUERY)
    forget_views()
    many = [view(QUERY) for _ in range(args.tabs)]
    print(f"first view (training included): {trained:.2f} CPU s")
    print(f"one view of the cached run: {one:.2f} CPU s")
    print(f"{args.tabs} views of it: {sum(many):.2f} CPU s ({', '.join(f'{t:.2f}' for t in many)})")
    print(f"ratio {args.tabs} tabs / one tab = {sum(many) / one:.2f}")


if __name__ == "__main__":
    main()
