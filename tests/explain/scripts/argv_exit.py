"""Writes what it sees of sys.argv, sys.path[0], __name__ and its loader to argv[1], then exits with argv[2]."""

import json
import sys

import sibling_helper

with open(sys.argv[1], "w") as f:
    json.dump({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "helper": sibling_helper.VALUE,
               "loader": type(__loader__).__name__, "loads": __loader__.name}, f)
sys.exit(int(sys.argv[2]))
