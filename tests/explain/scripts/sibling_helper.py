"""Imported by argv_exit.py from its own folder."""

VALUE = 42
