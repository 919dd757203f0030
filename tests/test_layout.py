"""The code's shape (issue 42): no module of 350 lines or more in fitlab/, ui/ or tools/, and
tools import nothing from tests."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(p for d in ("fitlab", "ui", "tools") for p in (ROOT / d).rglob("*.py"))


def test_modules_under_350_lines():
    long = {str(p.relative_to(ROOT)): n for p in MODULES if (n := len(p.read_text().splitlines())) >= 350}
    assert long == {}


def test_tools_import_nothing_from_tests():
    for path in (ROOT / "tools").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "tests" or n.startswith("tests.") for n in names), path
