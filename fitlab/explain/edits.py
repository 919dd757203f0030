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
