"""Prints, then closes stdout (python exits 0, saying nothing)."""

import sys

print("hello")
sys.stdout.close()
