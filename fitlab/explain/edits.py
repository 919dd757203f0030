"""Mechanical rewrites of one line of the user's code, each the out-of-place form of its write.

Every rewrite keeps what the program computes (a test applies each to a fixture script and
compares the gradients with a reference written without the write); a line that does not
parse as one simple statement gets no rewrite.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

# Fills whose result does not read the old values: `x.normal_()` -> `x = torch.randn_like(x)`.
_LIKE = {"normal_": "torch.randn_like", "uniform_": "torch.rand_like", "zero_": "torch.zeros_like"}
_FILLS = frozenset({"normal_", "uniform_", "bernoulli_", "exponential_", "cauchy_", "log_normal_",
                    "geometric_", "random_", "fill_", "zero_", "copy_"})
_INPLACE_KW = re.compile(r"\s*,\s*inplace\s*=\s*True\b|\binplace\s*=\s*True\s*,\s*|\binplace\s*=\s*True\b")


@dataclass(frozen=True)
class Edit:
    """Replace line `line` of `file` (its text `old`) by the lines `new`."""

    file: str
    line: int
    old: str
    new: tuple

    def to_dict(self) -> dict:
        """The JSON object of one entry of the fix's "edits"."""
        return {"file": self.file, "line": self.line, "old": self.old, "new": list(self.new)}


def _statement(code: str):
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    return tree.body[0] if len(tree.body) == 1 else None


def _indent(raw: str) -> str:
    return raw[:len(raw) - len(raw.lstrip())]


def _simple(node) -> bool:
    """A name or a chain of attributes (`h`, `self.state`): something a line can rebind."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _mentions(tree, target) -> bool:
    text = ast.unparse(target)
    return any(ast.unparse(n) == text for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.Attribute)))


def _edited(file: str, line: int, raw: str, *new: str) -> Edit:
    pad = _indent(raw)
    return Edit(file, line, raw.rstrip("\n"), tuple(pad + n for n in new))


def out_of_place(file: str, line: int, raw: str) -> Edit | None:
    """`y += 1` -> `y = y + 1`; `e.exp_()` -> `e = e.exp()`; `torch.relu_(h)` -> `h = torch.relu(h)`;
    `x.normal_()` -> `x = torch.randn_like(x)`; `buf.copy_(v)` -> `buf = torch.empty_like(buf).copy_(v)`."""
    st = _statement(raw)
    if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr.endswith("_")
            and ast.unparse(st.targets[0]) in {ast.unparse(a) for a in [st.value.func.value, *st.value.args[:1]]}):
        # h = F.relu_(h) -> h = F.relu(h): only when the line rebinds the tensor it wrote.
        st.value.func.attr = st.value.func.attr[:-1]
        return _edited(file, line, raw, ast.unparse(st))
    if isinstance(st, ast.AugAssign) and _simple(st.target):
        target = ast.unparse(st.target)
        value = ast.BinOp(ast.Name(target), st.op, st.value)
        return _edited(file, line, raw, f"{target} = {ast.unparse(value)}")
    if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute) and st.value.func.attr.endswith("_")):
        return None
    call, name = st.value, st.value.func.attr
    owner = call.func.value
    args = ", ".join([ast.unparse(a) for a in call.args] + [ast.unparse(k) for k in call.keywords])
    if _simple(owner) and not (isinstance(owner, ast.Name) and owner.id in ("torch", "F")):
        x = ast.unparse(owner)
        if name in _LIKE and not args:
            return _edited(file, line, raw, f"{x} = {_LIKE[name]}({x})")
        if name in _FILLS:
            return _edited(file, line, raw, f"{x} = torch.empty_like({x}).{name}({args})")
        return _edited(file, line, raw, f"{x} = {x}.{name[:-1]}({args})")
    # torch.relu_(h), F.relu_(h): the function's first argument is the tensor written.
    if call.args and _simple(call.args[0]):
        x = ast.unparse(call.args[0])
        return _edited(file, line, raw, f"{x} = {ast.unparse(owner)}.{name[:-1]}({args})")
    return None


def clone_first(file: str, line: int, raw: str) -> Edit | None:
    """`h[:, 0] = 0` -> `h = h.clone()` then the line; when the value reads h itself
    (`h[t] = f(h[t - 1])`), the value is computed from the old h first."""
    st = _statement(raw)
    if isinstance(st, ast.Assign) and len(st.targets) == 1:
        target, value = st.targets[0], st.value
    elif isinstance(st, ast.AugAssign):
        target, value = st.target, st.value
    else:
        return None
    if not (isinstance(target, ast.Subscript) and _simple(target.value)):
        return None
    base = ast.unparse(target.value)
    if not _mentions(value, target.value):
        return _edited(file, line, raw, f"{base} = {base}.clone()", raw.strip())
    sign = "=" if isinstance(st, ast.Assign) else ast.unparse(
        ast.AugAssign(ast.Name("a"), st.op, ast.Name("b"))).split()[1]
    return _edited(file, line, raw, f"value = {ast.unparse(value)}", f"{base} = {base}.clone()",
                   f"{ast.unparse(target)} {sign} value")


def without_inplace(file: str, line: int, raw: str) -> Edit | None:
    """The line without its `inplace=True` argument, or None if it has none."""
    new = _INPLACE_KW.sub("", raw.rstrip("\n"))
    return None if new == raw.rstrip("\n") else Edit(file, line, raw.rstrip("\n"), (new,))


def clone_weight(file: str, line: int, raw: str) -> Edit | None:
    """`a = emb.weight @ W.t()` -> `a = emb.weight.clone() @ W.t()` (nn.Embedding's documented fix)."""
    new = re.sub(r"\.weight\b(?!\.clone\(\))", ".weight.clone()", raw.rstrip("\n"))
    return None if new == raw.rstrip("\n") else Edit(file, line, raw.rstrip("\n"), (new,))


def _builds(raw: str, cls: str) -> bool:
    """Whether the line's code (not a comment or a string) calls `cls(..., inplace=True)`."""
    st = _statement(raw)
    return st is not None and any(
        isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None)) == cls
        and any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value is True
                for k in n.keywords)
        for n in ast.walk(st))


def built_with_inplace(lines: dict, cls: str) -> list:
    """Edits dropping `inplace=True` from every line of the given files (path -> lines) that
    builds `cls(...)` with it."""
    out = []
    for path, text in sorted(lines.items()):
        for i, raw in enumerate(text, 1):
            if cls in raw and "inplace" in raw and _builds(raw, cls):
                edit = without_inplace(path, i, raw)
                if edit is not None:
                    out.append(edit)
    return out


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


def view_rebinding(file: str, line: int, raw: str, lines: list) -> tuple:
    """(Edit, "", base) rebinding the view a line writes (`x += v` -> `x = x + v`) when nothing after
    the line can read the tensor it views; else (None, why in one clause, base), why "" for a line
    with no out-of-place form. base: the name of the tensor the view views where the write's block
    binds one, the view's own name where it views a call's result, else None.

    The view's name must be bound in the write's block, `x = <view of B>`, where B is a new tensor (a
    call's result, taken as new), or a name bound in that block to one, which nothing keeps under
    another name and nothing reads after the write (a later pass of a loop, a function defined in
    the scope included). Anything else (a view passed in as an argument, a view of an attribute or of
    a notebook's variable) the line cannot follow: the report says so and edits nothing.
    """
    edit = out_of_place(file, line, raw)
    if edit is None or not edit.new or not isinstance(_statement(edit.new[-1]), ast.Assign):
        return None, "", None
    name = _statement(edit.new[-1]).targets[0]
    if not isinstance(name, ast.Name):
        return None, (f"this line writes through a view held by an object (`{ast.unparse(name)}`): what else "
                      "reads the tensor it views is not known here, so no line is rebound"), None
    x = name.id
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return None, "", None
    parents = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    write = next((n for n in ast.walk(tree) if isinstance(n, (ast.AugAssign, ast.Expr)) and n.lineno == line), None)
    up = parents.get(write)
    block = next((getattr(up, f) for f in ("body", "orelse", "finalbody") if write in getattr(up, f, ())), None)
    if block is None:
        return None, "", None
    scope = up
    while not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = parents[scope]
    rebound = edit.new[-1].strip()

    def unknown(what: str, base=None) -> tuple:
        return None, (f"`{x}` is a view of a tensor this line cannot follow ({what}): rebinding `{x}` "
                      f"(`{rebound}`) would leave that tensor unwritten for whatever reads it later, so no "
                      "line is rebound"), base

    def read_later(b: str, where: str) -> tuple:
        return None, (f"`{x}` is a view of `{b}`, which line {where}: rebinding `{x}` (`{rebound}`) would "
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
    return edit, "", b or x


def clone_saved(file: str, line: int, raw: str, name: str) -> Edit | None:
    """At the line that saved a tensor: `y = h @ w` -> `y = h.clone() @ w` where it reads `name`,
    or `h = torch.tanh(a)` -> `h = torch.tanh(a).clone()` where it binds it (the op keeps its own)."""
    st = _statement(raw)
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1):
        return None
    reads = [n for n in ast.walk(st.value) if isinstance(n, ast.Name) and n.id == name]
    if reads:
        class Clone(ast.NodeTransformer):
            def visit_Name(self, node):
                if node.id != name:
                    return node
                return ast.Call(ast.Attribute(ast.Name(name, ast.Load()), "clone", ast.Load()), [], [])
        st.value = Clone().visit(st.value)
    elif isinstance(st.targets[0], ast.Name) and st.targets[0].id == name:
        st.value = ast.Call(ast.Attribute(st.value, "clone", ast.Load()), [], [])
    else:
        return None
    return _edited(file, line, raw, ast.unparse(st))
