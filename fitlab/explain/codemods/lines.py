"""Codemods of one line: the write's out-of-place form, a copy before an index write, `inplace=True`
dropped where a module is built, and a `.clone()` where the tensor was saved.

An edit that rebinds a name is applied only where the rebinding changes nothing any other code can
see: a name bound in the write's own function (or at module level), never a function's argument, a
closure's or a global name, an attribute (but a module's own buffer, whose cause asks for it) or a
tensor in a container. Rebinding those would leave the tensor the caller holds unwritten (a helper's
`batch -= mean` rewritten to `batch = batch - mean` drops the normalisation for its caller); the
cause then falls back to a `.clone()` at the saved line (advice.py), which keeps every write."""

from __future__ import annotations

import libcst as cst

from fitlab.explain.codemods import (
    Codemod,
    OwnBody,
    Site,
    Skip,
    Tree,
    method,
    parse_statements,
    read_nodes,
    reads,
    targets,
)

# Fills whose result does not read the old values: `x.normal_()` -> `x = torch.randn_like(x)`.
_LIKE = {"normal_": "torch.randn_like", "uniform_": "torch.rand_like", "zero_": "torch.zeros_like"}
_FILLS = frozenset({"normal_", "uniform_", "bernoulli_", "exponential_", "cauchy_", "log_normal_",
                    "geometric_", "random_", "fill_", "zero_", "copy_"})
# Owners of functions, not tensors: `torch.relu_(h)` writes its first argument.
_FUNCTIONS = frozenset({"torch", "F", "nn.functional", "torch.nn.functional", "functional", "torch.special"})
# What every refusal to rebind a name others can see says (advice.py then clones at the save).
VISIBLE = "rebinding it would leave"
# Atoms that need no parentheses as an operand.
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


def _simple(node) -> bool:
    """A name or a chain of attributes (`h`, `self.state`)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def _inplace_true(arg) -> bool:
    return (arg.keyword is not None and arg.keyword.value == "inplace"
            and isinstance(arg.value, cst.Name) and arg.value.value == "True")


def _without_inplace(call):
    args = [a for a in call.args if not _inplace_true(a)]
    if args:  # the new last argument takes the dropped one's closing whitespace
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


class _Bindings(OwnBody):
    """The names a function binds itself and those it declares global or nonlocal."""

    def __init__(self):
        self.bound, self.declared = set(), set()

    def visit_AssignTarget(self, node) -> None:
        self.bound |= reads(node.target) if isinstance(node.target, (cst.Name, cst.Tuple, cst.List)) else set()

    def visit_AnnAssign(self, node) -> None:
        if isinstance(node.target, cst.Name):
            self.bound.add(node.target.value)

    def visit_For(self, node) -> None:
        self.bound |= reads(node.target)

    def visit_AsName(self, node) -> None:
        self.bound |= reads(node.name)

    def visit_Global(self, node) -> None:
        self.declared |= {n.name.value for n in node.names}

    def visit_Nonlocal(self, node) -> None:
        self.declared |= {n.name.value for n in node.names}


def rebindable(tree: Tree, statement, target, attributes: bool = False) -> None:
    """Raise Skip unless rebinding `target` at `statement` is invisible to other code (the
    module's docstring); `attributes`: an attribute may be rebound (a module's own buffer)."""
    what = tree.code(target)
    if isinstance(target, cst.Attribute):
        if attributes and _simple(target):
            return
        raise Skip(f"`{what}` is an attribute: {VISIBLE} the tensor others hold unwritten")
    if not isinstance(target, cst.Name):
        raise Skip(f"`{what}` is held by a container: {VISIBLE} the tensor others hold unwritten")
    alias = _alias_of(tree, statement, target.value)
    if alias is not None:
        raise Skip(f"`{what}` is another name for `{alias}`: {VISIBLE} the tensor `{alias}` holds unwritten")
    fn = tree.function_of(statement)
    if fn is None:
        return
    params = fn.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    names |= {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
    if target.value in names:
        raise Skip(f"`{what}` is an argument of {fn.name.value}(): {VISIBLE} the caller's "
                   "tensor unwritten")
    seen = _Bindings()
    fn.body.visit(seen)
    if target.value in seen.declared or target.value not in seen.bound:
        raise Skip(f"`{what}` is not bound in {fn.name.value}() (a closure's or a global name): "
                   f"{VISIBLE} the tensor others hold unwritten")


def _alias_of(tree: Tree, statement, name: str) -> str | None:
    """What `name` is another name for (`total = maps[0]`: `maps[0]`), where the last statement of the
    block before `statement` that binds it binds it to a name, an attribute or an item; else None."""
    block = tree.block_of(statement) or []
    for st in reversed(block[:block.index(statement)] if statement in block else []):
        if name not in targets(st):
            continue
        small = st.body[0] if isinstance(st, cst.SimpleStatementLine) else None
        value = small.value if isinstance(small, cst.Assign) else None
        # A slice (`h[:, :4]`) is a view, which aliases.py judges; an item (`maps[0]`) or a name is an alias.
        if isinstance(value, (cst.Name, cst.Attribute)) or isinstance(value, cst.Subscript) and not any(
                isinstance(e.slice, cst.Slice) for e in value.slice):
            return tree.code(value)
        return None
    return None


class OutOfPlace(Codemod):
    """The write at the written line as its out-of-place form."""

    name = "out_of_place"
    summary = ("the write as its out-of-place form: `y += 1` -> `y = y + 1`, `e.exp_()` -> `e = e.exp()`, "
               "`F.relu(x, inplace=True)` -> `F.relu(x)`, `x.normal_()` -> `x = torch.randn_like(x)`")

    def __init__(self, attributes: bool = False):
        super().__init__()
        self.attributes = attributes

    def find(self, tree: Tree, site: Site) -> None:
        st, small = tree.written(site)
        code = tree.code
        calls = _Calls()
        small.visit(calls)
        inplace = [c for c in calls.found if any(_inplace_true(a) for a in c.args)]
        if inplace:   # F.relu(x, inplace=True): the same call without it
            for c in inplace:
                tree.mark(c, _without_inplace)
            return
        chained = [c for c in calls.found if _underscored(c) and isinstance(c.func.value, cst.Call)]
        if chained:   # torch.exp(x).add_(1): the result is new, its out-of-place form binds the same
            for c in chained:
                tree.mark(c.func, c.func.with_changes(attr=cst.Name(c.func.attr.value[:-1])))
            return
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call) \
                and _underscored(small.value):
            call, target = small.value, small.targets[0].target
            written = [call.func.value, *(a.value for a in call.args[:1])]
            if code(target) in {code(w) for w in written}:   # h = F.relu_(h) -> h = F.relu(h)
                rebindable(tree, st, target, self.attributes)
                tree.mark(call.func, call.func.with_changes(attr=cst.Name(call.func.attr.value[:-1])))
                return
        if isinstance(small, cst.AugAssign) and _simple(small.target):
            rebindable(tree, st, small.target, self.attributes)
            tree.mark(st, parse_statements(_augmented(tree, small), st))
            return
        if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and _underscored(small.value)):
            raise Skip(f"line {site.written[-1]} has no in-place call or augmented assignment to rewrite")
        call = small.value
        name, owner = call.func.attr.value, call.func.value
        args = ", ".join(code(a).rstrip(", ") for a in call.args)
        if _simple(owner) and code(owner) not in _FUNCTIONS:
            rebindable(tree, st, owner, self.attributes)
            new = _method_out_of_place(code(owner), name, args)
        elif call.args and _simple(call.args[0].value) and call.args[0].keyword is None:
            x = code(call.args[0].value)   # torch.relu_(h): the first argument is the tensor written
            rebindable(tree, st, call.args[0].value, self.attributes)
            new = f"{x} = {code(owner)}.{name[:-1]}({args})"
        else:
            raise Skip("the tensor written is not held by a name")
        tree.mark(st, parse_statements(new, st))


def _augmented(tree: Tree, small) -> str:
    """`t op= v` as `t = t op v`."""
    op = getattr(cst, type(small.operator).__name__.removesuffix("Assign"))()
    t, v = tree.code(small.target), tree.code(small.value)
    value = v if isinstance(small.value, _ATOMS) else f"({v})"
    return f"{t} = {t} {tree.code(op).strip()} {value}"


def _method_out_of_place(x: str, name: str, args: str) -> str:
    """`x.name_(args)` rebound out of place: `x = x.name(args)`, a fill without reading `x`."""
    if name in _LIKE and not args:
        return f"{x} = {_LIKE[name]}({x})"
    if name in _FILLS:
        return f"{x} = torch.empty_like({x}).{name}({args})"
    return f"{x} = {x}.{name[:-1]}({args})"


def out_of_place(tree: Tree, small, name: str) -> str:
    """The statement that rebinds `name` to what the in-place write `small` (`name op= v`,
    `name.op_(…)`) makes of it, out of place; Skip if `small` is no such write of `name`."""
    code = tree.code
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and small.target.value == name:
        return _augmented(tree, small)
    call = small.value if isinstance(small, cst.Expr) else None
    if (isinstance(call, cst.Call) and _underscored(call) and isinstance(call.func.value, cst.Name)
            and call.func.value.value == name):
        return _method_out_of_place(name, call.func.attr.value, ", ".join(code(a).rstrip(", ") for a in call.args))
    raise Skip(f"the written line is no in-place write of `{name}`")


def _underscored(call) -> bool:
    """`x.add_(…)`: a method or function whose name ends in one underscore (not a dunder)."""
    f = call.func
    return isinstance(f, cst.Attribute) and f.attr.value.endswith("_") and not f.attr.value.endswith("__")


class _Calls(cst.CSTVisitor):
    def __init__(self):
        self.found: list = []

    def visit_Call(self, node) -> None:
        self.found.append(node)


class CloneFirst(Codemod):
    """`x = x.clone()` before the index or slice write at the written line."""

    name = "clone_first"
    summary = ("`x = x.clone()` before an index or slice write `x[i] = v` (the value computed first when "
               "it reads `x`)")

    def find(self, tree: Tree, site: Site) -> None:
        st, small = tree.written(site)
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, sign = small.targets[0].target, "="
        elif isinstance(small, cst.AugAssign):
            target, sign = small.target, tree.code(small.operator).strip()
        else:
            raise Skip("the written line is no index or slice assignment")
        if not (isinstance(target, cst.Subscript) and _simple(target.value)):
            raise Skip("the written line is no index or slice assignment to a named tensor")
        if any(isinstance(getattr(e.slice, "value", None), cst.SimpleString) for e in target.slice):
            raise Skip(f"`{tree.code(target)}` is held by a container: {VISIBLE} the tensor others hold unwritten")
        rebindable(tree, st, target.value)
        base, value = tree.code(target.value), tree.code(small.value)
        if isinstance(target.value, cst.Name) and target.value.value not in reads(small.value):
            new = f"{base} = {base}.clone()\n{tree.code(small).strip()}"
        else:   # h[t] = f(h[t - 1]): the value read from the tensor before it is copied
            new = f"value = {value}\n{base} = {base}.clone()\n{tree.code(target)} {sign} value"
        tree.mark(st, parse_statements(new, st))


class DropInplace(Codemod):
    """`inplace=True` dropped where the module that wrote is built (`site.module`, its class)."""

    name = "drop_inplace"
    summary = "`inplace=True` dropped where the in-place module is built: `nn.ReLU(inplace=True)` -> `nn.ReLU()`"

    def find(self, tree: Tree, site: Site) -> None:
        if site.module is None:
            raise Skip("no module class to look for")
        for node in tree.positions:
            if isinstance(node, cst.Call) and any(_inplace_true(a) for a in node.args):
                f = node.func
                called = f.attr.value if isinstance(f, cst.Attribute) else getattr(f, "value", None)
                if called == site.module:
                    tree.mark(node, _without_inplace)


class CloneWeight(Codemod):
    """`emb.weight` -> `emb.weight.clone()` at the saved line (nn.Embedding's documented fix)."""

    name = "clone_weight"
    summary = ("`.weight` -> `.weight.clone()` where the weight is used before `nn.Embedding(max_norm=...)` "
               "renormalises it")

    def find(self, tree: Tree, site: Site) -> None:
        if not site.saved:
            raise Skip("no saved line in this file")
        for node in tree.positions:
            if isinstance(node, cst.Attribute) and node.attr.value == "weight" and tree.line_of(node) == site.saved[-1]:
                up = tree.parents.get(node)
                if not (isinstance(up, cst.Attribute) and up.attr.value == "clone"):
                    tree.mark(node, method(node, "clone"))


class CloneAtSave(Codemod):
    """`.clone()` of the written tensor at the line that saved it: `site.name` read there becomes
    `name.clone()`, or the line's value is cloned when it binds `site.name` (or, with no name, the
    one name the line binds); a container built there gets each element a call computes cloned; on
    `x /= x.norm()` (saved and written on one line) the read of `x` is cloned."""

    name = "clone_at_save"
    summary = ("`.clone()` at the line that saved the tensor: `y = h @ w` -> `y = h.clone() @ w`, or "
               "`h = torch.tanh(a)` -> `h = torch.tanh(a).clone()`; every later write still happens")

    def find(self, tree: Tree, site: Site) -> None:
        if not site.saved:
            raise Skip("no saved line in this file")
        st, small = tree.simple(site.saved[-1])
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            # x /= x.norm(): saved and written on one line; the read the op saved is the one cloned.
            for n in read_nodes(small.value, site.name or small.target.value):
                tree.mark(n, method(n, "clone"))
            return
        if not isinstance(small, cst.Assign):
            raise Skip("the saved line is no assignment")
        found = read_nodes(small.value, site.name) if site.name is not None else []
        if found:
            for n in found:
                tree.mark(n, method(n, "clone"))
        elif isinstance(small.value, (cst.Dict, cst.List, cst.Tuple)):
            # A container made at the saved line: each tensor an element computes, copied as it is stored.
            for e in small.value.elements:
                if isinstance(e.value, cst.Call):
                    tree.mark(e.value, method(e.value, "clone"))
        elif any(isinstance(t.target, cst.Name) and site.name in (None, t.target.value) for t in small.targets):
            tree.mark(small.value, method(small.value, "clone"))
        else:
            raise Skip("the saved line neither reads nor binds a name of the saved tensor, nor builds a container")
