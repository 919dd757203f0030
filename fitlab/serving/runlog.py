"""Moved to fitlab.compare (Compare's model). Only fitlab/figures/charts.py
still imports it from here: the lead changes that import, then deletes this."""

from fitlab.compare import LoggedRun, overlay_long

__all__ = ["LoggedRun", "overlay_long"]
