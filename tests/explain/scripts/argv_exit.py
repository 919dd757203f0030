"""Writes what it sees of sys.argv, sys.path[0], __name__, __file__, __cached__, __spec__ and its loader to
argv[1], then exits with argv[2]."""

import json
import sys

import sibling_helper

with open(sys.argv[1], "w") as f:
    json.dump({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "helper": sibling_helper.VALUE,
               "file": __file__, "cached": __cached__, "spec": getattr(__spec__, "name", None), "package": __package__,
               "loader": type(__loader__).__name__, "loads": getattr(__loader__, "name", None)}, f)
sys.exit(int(sys.argv[2]))
