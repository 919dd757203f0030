"""Writes a marker file named by argv[1], then changes folder to argv[2]."""

import os
import sys

with open(sys.argv[1], "w") as f:
    f.write("ran")
os.chdir(sys.argv[2])
