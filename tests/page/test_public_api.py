"""The page speaks Streamlit's public API only (st.*, st.column_config,
st.cache_*, st.fragment, st.query_params, widgets with keys and bind): a
private module or attribute pins the page to one Streamlit release."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = sorted([ROOT / "streamlit_app.py", *(ROOT / "ui").rglob("*.py")])
# Streamlit's submodules documented for use (the rest is Streamlit's own plumbing).
PUBLIC = {"streamlit", "streamlit.components.v1", "streamlit.testing.v1"}


def imports(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of each import of a streamlit module in `path`; name None for `import module`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "streamlit"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit":
            found += [(node.module, alias.name) for alias in node.names]
    return found


def test_the_page_imports_no_private_streamlit_module():
    private = {f"{path.relative_to(ROOT)}: {module}.{name}"
               for path in PAGE for module, name in imports(path) if module not in PUBLIC}
    assert not private, sorted(private)


def test_the_page_touches_no_private_attribute_of_st():
    private = {f"{path.relative_to(ROOT)}:{node.lineno}: st.{node.attr}"
               for path in PAGE for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Attribute) and node.attr.startswith("_")
               and isinstance(node.value, ast.Name) and node.value.id == "st"}
    assert not private, sorted(private)

