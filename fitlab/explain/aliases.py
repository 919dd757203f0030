"""Whether rebinding the name a line writes through a view is safe: what else reads the tensor
the view views. An analysis of the user's file (Python's `ast`), no edit: the edits are the
codemods' (codemods/)."""

from __future__ import annotations

import ast

# Ops that return a view of their first tensor (or of `self`): `x = h[:, :k]`, `x = h.transpose(1, 2)`.
# reshape/flatten/contiguous may copy; counting them as views only makes the check stricter.
_VIEWS = frozenset({"view", "view_as", "t", "transpose", "permute", "narrow", "select", "unsqueeze", "squeeze",
                    "expand", "expand_as", "unflatten", "movedim", "moveaxis", "swapaxes", "swapdims", "diagonal",
                    "unfold", "as_strided", "reshape", "flatten", "contiguous", "chunk", "split", "unbind",
                    "tensor_split", "split_with_sizes", "view_as_real", "view_as_complex", "real", "imag"})
_VIEW_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Calls that keep their argument itself (an alias the scope can no longer follow by name).
# Attributes that are no tensor (`B, T = h.shape`).
_FACTS = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "layout"})
_KEEPS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "register_buffer", "setattr"})


def _root(node):
    """What a view chain views: `h[:, :k].transpose(1, 2)` -> `h`; `torch.narrow(h, …)` -> `h`."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRS:
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
            owner = node.func.value
            node = node.args[0] if isinstance(owner, ast.Name) and owner.id == "torch" and node.args else owner
        else:
            return node


def _binds(st, name: str) -> bool:
    targets = st.targets if isinstance(st, ast.Assign) else [getattr(st, "target", None)]
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for t in targets if t is not None for n in ast.walk(t))


def _binding(block: list, before: int, name: str):
    """The last statement of `block` before index `before` that binds `name` (None if another kind of
    statement or none binds it)."""
    for st in reversed(block[:before]):
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(st)):
            return st if isinstance(st, ast.Assign) and _binds(st, name) else None
    return None


def _consumed(name_node, parents: dict) -> bool:
    """Whether a read of a tensor only feeds an op that makes a new tensor (`conv(h)`, `h * 2`,
    `h.sum()`), as opposed to one that keeps it under another name (`skip = h`, `xs.append(h)`,
    `y = h[:, 1:]`)."""
    up = parents.get(name_node)
    if isinstance(up, (ast.BinOp, ast.UnaryOp, ast.Compare)):
        return True
    if isinstance(up, ast.Call) and name_node in up.args:
        f = up.func
        return getattr(f, "attr", getattr(f, "id", None)) not in _KEEPS | _VIEWS
    if isinstance(up, ast.Attribute) and up.attr in _FACTS:
        return True
    if isinstance(up, ast.Attribute) and up.attr not in _VIEWS | _VIEW_ATTRS | {"data"}:
        return isinstance(parents.get(up), ast.Call)
    return False


def _inside(node, outer, parents: dict) -> bool:
    up = parents.get(node)
    while up is not None and up is not outer:
        up = parents.get(up)
    return up is outer


def _nested(node, scope, parents: dict) -> bool:
    """Whether a node is inside a function or class defined in `scope`."""
    up = parents.get(node)
    while up is not scope:
        if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return True
        up = parents.get(up)
    return False


def view_rebinding(file: str, line: int, rebound: str, lines: list) -> tuple:
    """("", base) when the out-of-place edit of a write through a view, `rebound` (the line's new
    last statement, `x = x + v`), may rebind the view's name: nothing after the line can read the
    tensor it views; else (why in one clause, base). base: the name of the tensor the view views
    where the write's block binds one, the view's own name where it views a call's result, else None.

    The view's name must be bound in the write's block, `x = <view of B>`, where B is a new tensor (a
    call's result, taken as new), or a name bound in that block to one, which nothing keeps under
    another name and nothing reads after the write (a later pass of a loop, a function defined in
    the scope included). Anything else (a view passed in as an argument, a view of an attribute or of
    a notebook's variable) the line cannot follow: the report says so and rebinds nothing.
    """
    try:
        st = ast.parse(rebound.strip()).body[-1]
    except SyntaxError:
        return "", None
    if not isinstance(st, ast.Assign):
        return "", None
    name = st.targets[0]
    if not isinstance(name, ast.Name):
        return (f"this line writes through a view held by an object (`{ast.unparse(name)}`): what else "
                "reads the tensor it views is not known here, so no line is rebound"), None
    x = name.id
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return "", None
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    write = next((n for n in ast.walk(tree) if isinstance(n, (ast.AugAssign, ast.Expr)) and n.lineno == line), None)
    up = parents.get(write)
    block = next((getattr(up, f) for f in ("body", "orelse", "finalbody") if write in getattr(up, f, ())), None)
    if block is None:
        return "", None
    scope = up
    while not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = parents[scope]
    rebound = ast.get_source_segment(rebound.strip(), st) or rebound.strip()   # without its comment

    def unknown(what: str, base=None) -> tuple:
        return (f"`{x}` is a view of a tensor this line cannot follow ({what}): rebinding `{x}` "
                      f"(`{rebound}`) would leave that tensor unwritten for whatever reads it later, so no "
                      "line is rebound"), base

    def read_later(b: str, where: str) -> tuple:
        return (f"`{x}` is a view of `{b}`, which line {where}: rebinding `{x}` (`{rebound}`) would "
                      f"leave `{b}` unwritten there, so no line is rebound"), b

    bound = _binding(block, block.index(write), x)
    if bound is None:
        return unknown("bound elsewhere, e.g. an argument")
    base, b, made = _root(bound.value), None, bound
    if isinstance(base, ast.Attribute):
        return unknown(f"`{ast.unparse(base)}`, an attribute")
    if isinstance(base, ast.Name):
        b = base.id
        if file.startswith("<") and isinstance(scope, ast.Module):
            return unknown(f"`{b}`, a variable of the notebook")
        made = _binding(block, block.index(bound), b)
        if made is None or _root(made.value) is not made.value or isinstance(made.value, (ast.Name, ast.Attribute)):
            return unknown(f"`{b}`, bound elsewhere or a view itself")
    loop = up if isinstance(up, (ast.For, ast.AsyncFor, ast.While)) else None
    in_bound = range(bound.lineno, bound.end_lineno + 1)
    for n in ast.walk(scope):
        if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in (x, b)) or n.lineno in in_bound:
            continue
        if n.id == b and b != x:
            if loop is not None and n.lineno < made.lineno and _inside(n, loop, parents):
                return read_later(b, f"{n.lineno} reads in the loop's next pass")
            if _nested(n, scope, parents):
                return unknown(f"`{b}`, read by a function defined here", b)
            if n.lineno > line:
                return read_later(b, f"{n.lineno} reads after this write")
        # Between the base's making and the write, a read may only feed an op that makes a new tensor.
        if made.end_lineno < n.lineno < line and not _consumed(n, parents):
            return unknown(f"`{n.id}`, also kept at line {n.lineno}", b)
    return "", b or x
