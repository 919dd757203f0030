"""Imported relatively by pkg.train."""

SCALE = 3
