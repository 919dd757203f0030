"""Raises KeyboardInterrupt itself."""

raise KeyboardInterrupt
