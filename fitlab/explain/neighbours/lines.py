"""The edited lines a neighbouring error's report shows where its fix is mechanical (edits.py's Edit):
a write under `torch.no_grad()`, an accumulation out of place, a custom Function's output cloned.
Shown, not applied: `--fix` runs for the in-place error only."""

from __future__ import annotations

import ast
import linecache

from fitlab.explain import edits as ed

# A line that is one statement starting a block cannot be wrapped as one line.
_BLOCKS = (ast.For, ast.While, ast.If, ast.With, ast.FunctionDef, ast.ClassDef, ast.Try)


def _one_statement(raw: str):
    """The line's one statement, or None (a line continued elsewhere, a block's header)."""
    try:
        body = ast.parse(raw.strip()).body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 and not isinstance(body[0], _BLOCKS) else None


def under_no_grad(file: str, line: int) -> ed.Edit | None:
    """`w -= lr * w.grad` -> `with torch.no_grad():` and the line indented under it."""
    raw = linecache.getline(file, line)
    if _one_statement(raw) is None:
        return None
    pad = raw[:len(raw) - len(raw.lstrip())]
    return ed.Edit(file, line, raw.rstrip("\n"), (f"{pad}with torch.no_grad():", f"{pad}    {raw.strip()}"))


def out_of_place(file: str, line: int) -> ed.Edit | None:
    """`x += v` -> `x = x + v` (edits.out_of_place)."""
    raw = linecache.getline(file, line)
    return ed.out_of_place(file, line, raw) if raw else None


def cloned(file: str, line: int) -> ed.Edit | None:
    """`x = Fn.apply(z)` -> `x = Fn.apply(z).clone()`: one name bound to one call's result."""
    raw = linecache.getline(file, line)
    st = _one_statement(raw)
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
            and isinstance(st.value, ast.Call)):
        return None
    code = raw.split("#", 1)[0].rstrip()  # without a trailing comment, if that leaves the statement
    if _one_statement(code) is None:
        return None
    return ed.Edit(file, line, raw.rstrip("\n"), (f"{code}.clone()",))
