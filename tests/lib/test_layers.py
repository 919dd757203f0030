"""The library's wings as layers: every import of fitlab/ (lazy ones too)
goes to its own layer or one below, and no module imports itself round a
circle. numerics/ is the floor; explain/ imports nothing else of fitlab;
nothing imports Streamlit or the page."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Lowest first. The run's own modules sit at the top level of fitlab/.
RUN = ("config", "data", "model", "blog", "weights", "run", "frames", "baseline", "outcome")
LAYERS = (
    ("numerics",),
    (*RUN, "student", "shared_layer"),
    ("engines",),
    ("training", "sweeps", "compare"),
    ("failure", "figures", "serving", "fit_that_works"),
)


def modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "fitlab").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path) -> set[str]:
    """Every module name `path` imports, at any depth of its code."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def graph() -> dict[str, set[str]]:
    """module -> the fitlab modules it imports (a name that is no module is its package)."""
    known = modules()
    edges = {}
    for name, path in known.items():
        targets = set()
        for imported in imports(path):
            while imported and imported not in known:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported != "fitlab":
                targets.add(imported)
        edges[name] = targets
    return edges


def layer(module: str) -> int | None:
    wing = module.split(".")[1] if module != "fitlab" else None
    return next((i for i, names in enumerate(LAYERS) if wing in names), None)


def test_every_wing_has_a_layer_and_every_import_goes_level_or_down():
    edges = graph()
    unplaced = {m for m in edges if m != "fitlab" and not m.startswith("fitlab.explain") and layer(m) is None}
    assert not unplaced
    upward = [(a, b) for a, targets in edges.items() for b in targets
              if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)]
    assert not upward


def test_no_import_circles():
    edges, done, path = graph(), set(), []

    def visit(module):
        if module in path:
            raise AssertionError(" -> ".join(path[path.index(module):] + [module]))
        if module not in done:
            path.append(module)
            for target in sorted(edges[module]):
                visit(target)
            path.pop()
            done.add(module)

    for module in sorted(edges):
        visit(module)


def test_numerics_and_explain_stand_alone_and_nothing_imports_the_page():
    edges = graph()
    for module, targets in edges.items():
        if module.startswith(("fitlab.numerics", "fitlab.explain")):
            own = module.split(".")[:2]
            assert all(t.split(".")[:2] == own for t in targets), (module, targets)
        page = {n for n in imports(modules()[module]) if n.split(".")[0] in ("streamlit", "ui")}
        assert not page, (module, page)
