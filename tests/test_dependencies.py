"""The project's own files name every third-party module its code can import.

A newcomer installs the page with `requirements.txt` alone, and the explain tool with
`pip install .` (pyproject's `dependencies`); neither sees requirements-dev.txt, which is
all the test environment has ever needed. So the modules are found by reading the code,
not by importing it: every import statement in every first-party module the entry point
reaches, those inside functions included (a lazy import still runs when the page calls the
function), following first-party imports and `importlib.import_module` of a first-party name.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_PARTY = {"fitlab", "ui", "tools", "tests", "streamlit_app"}
# `%load_ext fitlab.explain` runs only inside IPython, which is then the user's own host.
HOSTS = {"IPython"}


def _file(module: str) -> Path | None:
    path = ROOT.joinpath(*module.split("."))
    return next((p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()), None)


def _package(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1])  # a module's package, or a package's own name (its __init__)


def _nodes(tree: ast.AST, whole: bool):
    """Every node of the module, or (whole=False) those run when it is imported: not in a def."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node)
                    if whole or not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def _imported_names(path: Path, whole: bool) -> set[str]:
    """Every module name an import statement (or import_module call) in `path` names."""
    names, package = set(), _package(path)
    for node in _nodes(ast.parse(path.read_text(), str(path)), whole):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # a submodule, if one
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.add(arg.value)
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                prefix = arg.values[0].value.rstrip(".")  # f"fitlab.explain.{home}": any module of it
                folder = ROOT.joinpath(*prefix.split("."))
                names.update(f"{prefix}.{p.stem}" for p in folder.glob("*.py"))
    return names


def third_party(*entry_points: Path) -> dict[str, str]:
    """Each third-party top-level module the entry points can import -> the first file importing it.

    A module named by an import is read whole; its parent packages, which the import only runs,
    are read outside their functions (fitlab/__init__.py's lazy `train` is the page's, not the tool's).
    """
    todo, seen, found = [(path, True) for path in entry_points], set(), {}
    while todo:
        path, whole = todo.pop()
        if (path, whole) in seen:
            continue
        seen.add((path, whole))
        for name in sorted(_imported_names(path, whole)):
            top = name.split(".")[0]
            if top in FIRST_PARTY:
                parts = name.split(".")  # importing a.b.c runs a and a.b, and names a.b.c
                todo.extend((f, i == len(parts)) for i in range(1, len(parts) + 1)
                            if (f := _file(".".join(parts[:i]))))
            elif top not in sys.stdlib_module_names and top != "__future__":
                found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def _distributions() -> dict[str, list[str]]:
    return packages_distributions()


def distribution(module: str) -> str:
    """The distribution that installs top-level `module` (its own name where none is installed)."""
    return _normal(_distributions().get(module, [module])[0])


def _requirement_names(lines) -> set[str]:
    return {_normal(re.split(r"[<>=!~\[; ]", line.strip())[0])
            for line in lines if line.strip() and not line.lstrip().startswith(("#", "-"))}


def missing(modules: dict[str, str], named: set[str]) -> dict[str, str]:
    return {f"{m} ({distribution(m)})": where for m, where in modules.items()
            if m not in HOSTS and distribution(m) not in named}


def test_requirements_txt_names_every_module_the_page_can_import():
    named = _requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    modules = third_party(ROOT / "streamlit_app.py")
    assert {"streamlit", "torch", "libcst"} <= modules.keys()  # the walk reaches the lazy imports
    assert missing(modules, named) == {}


def test_pyproject_dependencies_name_every_module_the_explain_tool_can_import():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    named = _requirement_names(project["dependencies"])
    modules = third_party(*sorted((ROOT / "fitlab" / "explain").glob("*.py")))
    assert {"torch", "libcst"} <= modules.keys()
    assert missing(modules, named) == {}


def test_the_explain_tool_reaches_nothing_of_the_page():
    """`import fitlab.explain` runs fitlab/__init__.py, whose lazy `train` is never called by the tool."""
    modules = third_party(*sorted((ROOT / "fitlab" / "explain").glob("*.py")))
    assert not {"streamlit", "pandas", "altair", "scipy"} & modules.keys()


def test_requirements_txt_pins_each_line_exactly():
    lines = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.+]+", ln.strip()) for ln in lines), lines


def test_the_app_extra_pins_what_requirements_txt_pins():
    """`pip install ".[app]"` and `-r requirements.txt` install the same page."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {ln.strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()
            if ln.strip() and not ln.startswith("#")}
    extra = set(project["optional-dependencies"]["app"])
    assert extra <= pins
    assert {_normal(pin.split("==")[0]) for pin in pins - extra} <= _requirement_names(project["dependencies"])
