"""The edits `--fix` applies, as codemods on a concrete syntax tree (libcst), as TorchFix does.

Each codemod takes a file's source and the line(s) the report points at, and returns the
edited source, or None when its edit does not apply there. The tree keeps everything it does
not edit as written: comments, blank lines, quotes, the trailing comment of a rewritten line.

- line edits (out_of_place, clone_first, clone_weight): the statement at a line becomes the
  statements advice.py printed for it (edits.py's rewrite of that one line);
- drop_inplace: `inplace=True` dropped from the calls on a line (where the module is built);
- detach_value: `labels = f(net, X)` -> `labels = f(net, X).detach()`, at the outermost line
  that made the saved graph's value;
- fresh_forward: after the statement that wrote the weights, the statements that computed the
  failing backward's root from the saved line on, run again (a fresh forward);
- detach_state: `h = h.detach()` before the line that carries a state into the next batch;
- clone_at_save: at the line that saved the tensor, `a` -> `a.clone()` for the name holding
  the written storage (or the line's result cloned, when the result is it).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

_STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class _Tree:
    """A parsed file with each statement's first and last line and its parent."""

    def __init__(self, source: str):
        self.wrapper = MetadataWrapper(cst.parse_module(source))
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)

    def statement(self, line: int):
        """The innermost statement whose lines hold `line`, or None."""
        found = [n for n, p in self.positions.items()
                 if isinstance(n, _STATEMENTS) and p.start.line <= line <= p.end.line]
        return min(found, key=lambda n: self.positions[n].end.line - self.positions[n].start.line, default=None)

    def block_of(self, node):
        """The statements of the block holding `node` (a statement), or None."""
        parent = self.parents.get(node)
        body = getattr(parent, "body", None)
        return list(body) if isinstance(body, (list, tuple)) else None

    def in_block(self, block: list, line: int):
        """The statement of `block` whose lines hold `line`, or None."""
        for n in block:
            p = self.positions[n]
            if p.start.line <= line <= p.end.line:
                return n
        return None

    def replaced(self, replacements: dict) -> str:
        """The source with each statement (by identity) replaced by a statement or a list of them."""
        class Swap(cst.CSTTransformer):
            def on_leave(self, original, updated):
                new = replacements.get(id(original))
                if new is None:
                    return updated
                return cst.FlattenSentinel(new) if isinstance(new, list) else new
        return self.module.visit(Swap()).code


def _parse(lines: tuple) -> list:
    """Statements parsed from lines of code (their common indent removed)."""
    pad = min((len(s) - len(s.lstrip()) for s in lines if s.strip()), default=0)
    return list(cst.parse_module("\n".join(s[pad:] for s in lines) + "\n").body)


def _keep_comment(old, new: list) -> list:
    """The new statements, the last keeping the old line's trailing comment."""
    if isinstance(old, cst.SimpleStatementLine) and new and isinstance(new[-1], cst.SimpleStatementLine):
        new[-1] = new[-1].with_changes(trailing_whitespace=old.trailing_whitespace)
    return new


def line_edit(source: str, line: int, old: str, new: tuple) -> str | None:
    """The statement at `line` (whose text starts with `old`) replaced by the statements `new`."""
    tree = _Tree(source)
    st = tree.statement(line)
    if not isinstance(st, cst.SimpleStatementLine) or tree.positions[st].start.line != line:
        return None
    if source.splitlines()[line - 1].strip() != old.strip():
        return None
    return tree.replaced({id(st): _keep_comment(st, _parse(new))})


def drop_inplace(source: str, line: int) -> str | None:
    """Every call that starts on `line` loses its `inplace=True` argument (a module built inside a
    longer statement, `nn.Sequential(..., nn.ReLU(inplace=True), ...)`, as much as on its own line)."""
    tree = _Tree(source)
    calls = [n for n, p in tree.positions.items() if isinstance(n, cst.Call) and p.start.line == line
             and any(_inplace_true(a) for a in n.args)]
    if not calls:
        return None
    new = {}
    for call in calls:
        args = [a for a in call.args if not _inplace_true(a)]
        if args:  # the new last argument takes the dropped one's closing whitespace
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new[id(call)] = call.with_changes(args=args)
    return tree.replaced(new)


def _inplace_true(arg) -> bool:
    return (arg.keyword is not None and arg.keyword.value == "inplace"
            and isinstance(arg.value, cst.Name) and arg.value.value == "True")


def _assign(st):
    """(target name, value) of `name = value`, or None."""
    if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign):
        a = st.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a.targets[0].target.value, a.value
    return None


def _method(value, name: str):
    return cst.Call(cst.Attribute(value, cst.Name(name)))


def detach_value(source: str, lines: tuple) -> str | None:
    """`labels = f(X)` -> `labels = f(X).detach()` at the first of `lines` (outermost first) that
    is such an assignment."""
    tree = _Tree(source)
    for line in lines:
        st = tree.statement(line)
        got = _assign(st)
        if got is not None:
            a = st.body[0]
            return tree.replaced({id(st): st.with_changes(body=[a.with_changes(value=_method(a.value, "detach"))])})
    return None


class _Names(cst.CSTVisitor):
    """The names a node reads (not the attributes after a dot, not keyword names)."""

    def __init__(self):
        self.names = set()

    def visit_Name(self, node) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node) -> bool:
        node.value.visit(self)
        return False


def _reads(node) -> set:
    v = _Names()
    node.visit(v)
    return v.names


def _targets(st) -> set:
    """Names a simple assignment statement binds."""
    out = set()
    if isinstance(st, cst.SimpleStatementLine):
        for small in st.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    out |= _reads(t.target)
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                out |= _reads(small.target)
    return out


def fresh_forward(source: str, saved: tuple, written: tuple, failed: int) -> str | None:
    """After the statement that holds the write (`opt_D.step()`), the assignments from the saved
    line on that the failing backward needs, again. saved and written: the lines of their frames
    in this file (a caller's too). The write is in the failing line's block (before it, or after
    it in a loop); the saved line in that block or in one around it (a forward made before the
    loop)."""
    tree = _Tree(source)
    fail = tree.statement(failed)
    block = tree.block_of(fail) if fail is not None else None
    if block is None:
        return None

    def first_in(statements: list):
        return next((n for n in (tree.in_block(statements, line) for line in saved) if n is not None), None)
    write = next((n for n in (tree.in_block(block, line) for line in written) if n is not None), None)
    if write is None or write is fail:
        return None
    # What the failing statement needs, through the assignments before it in its block.
    needed = _reads(fail)
    for st in reversed(block[:block.index(fail)]):
        if _targets(st) & needed:
            needed |= _reads(st)
    save, holder = first_in(block), fail
    if save is not None:
        if block.index(save) >= block.index(write):
            return None
        segment = block[block.index(save):block.index(write)]
    else:
        while save is None:   # out through the compound statements around the failing line
            up = tree.parents.get(tree.parents.get(holder))
            outer = tree.block_of(up) if isinstance(up, cst.BaseCompoundStatement) else None
            if outer is None:
                return None
            save, holder = first_in(outer), up
        segment = outer[outer.index(save):outer.index(holder)]
    again = []
    for st in reversed(segment):
        if _targets(st) & needed:
            again.insert(0, st)
            needed |= _reads(st)
    if save not in again:
        return None
    again = [st.with_changes(trailing_whitespace=cst.TrailingWhitespace(), leading_lines=[]) for st in again]
    again[0] = again[0].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
        "# fitlab-explain --fix: a fresh forward after the write"))])
    return tree.replaced({id(write): [write, *again]})


def detach_state(source: str, saved: int) -> str | None:
    """`h = h.detach()` before the statement at `saved`, for each name it both reads and binds
    (the state it carries into the next batch)."""
    tree = _Tree(source)
    st = tree.statement(saved)
    if not isinstance(st, cst.SimpleStatementLine) or not isinstance(st.body[0], cst.Assign):
        return None
    carried = sorted(_targets(st) & _reads(st.body[0].value))
    if not carried:
        return None
    new = [cst.parse_statement(f"{h} = {h}.detach()") for h in carried]
    new[0] = new[0].with_changes(leading_lines=st.leading_lines)
    return tree.replaced({id(st): [*new, st.with_changes(leading_lines=[])]})


def clone_at_save(source: str, saved: int, name: str) -> str | None:
    """At the statement at `saved`: `name` -> `name.clone()` where its value reads it, or, when
    it binds `name`, its value cloned."""
    tree = _Tree(source)
    st = tree.statement(saved)
    if not isinstance(st, cst.SimpleStatementLine) or not isinstance(st.body[0], cst.Assign):
        return None
    a = st.body[0]
    if name in _reads(a.value):
        class Clone(cst.CSTTransformer):
            def visit_Attribute(self, node) -> bool:
                return True

            def leave_Attribute(self, original, updated):
                return updated.with_changes(attr=original.attr)

            def leave_Name(self, original, updated):
                return _method(updated, "clone") if original.value == name else updated
        value = a.value.visit(Clone())
    elif name in _targets(st):
        value = _method(a.value, "clone")
    else:
        return None
    return tree.replaced({id(st): st.with_changes(body=[a.with_changes(value=value)])})


# The codemod of each cause's `edit` (causes.py); fix.py gives each what it needs.
EDITS = {
    "out_of_place": line_edit, "clone_first": line_edit, "drop_inplace": drop_inplace, "clone_weight": line_edit,
    "detach_value": detach_value, "fresh_forward": fresh_forward, "detach_state": detach_state,
    "clone_at_save": clone_at_save,
}
