"""tools/ is run on its own (`python -m tools.bench`, the server, the load): it imports nothing
from tests/, which is the tests' and may change with them."""

from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_tool_imports_from_tests():
    found = {p.name: sorted(n for n in _imports(p) if n.split(".")[0] == "tests") for p in TOOLS.glob("*.py")}
    assert {name: names for name, names in found.items() if names} == {}
