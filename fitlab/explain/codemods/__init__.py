"""The edits `--fix` applies: codemods on a concrete syntax tree (libcst), in TorchFix's shape.

Each cause of causes.py owns one `Codemod`. A codemod's `find` visits a parsed file at the lines
the report points at (a `Site`) and marks nodes with their replacements (`Tree.mark`, TorchFix's
`add_violation(node, replacement=...)`); `apply` swaps the marked nodes in one pass and returns the
edited source, or None and the one-line reason when the edit does not apply there. The tree
keeps everything it does not edit as written: comments, blank lines, quotes.

An edit must never stop the run: a file the parser cannot read, a replacement that would not
compile (checked with `compile`), or an error inside a codemod each make `apply` return None and
a one-line reason. Each codemod is tested by fixture pairs (tests/explain/codemods/NAME.in.py ->
NAME.out.py), with no torch and no process.

To add a codemod: subclass Codemod, give it a `name` and a one-line `summary` (docs/explain.md
lists them), write `find`, and name an instance as a cause's `codemod` in causes.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

STATEMENTS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


@dataclass(frozen=True)
class Site:
    """Where the report points in one file: the lines of the frames that saved the tensor, wrote
    it and failed (outermost first, this file's only), the name that holds the written tensor at
    the saved line (or None), and the class of the module that wrote in place (or None)."""

    saved: tuple = ()
    written: tuple = ()
    failed: tuple = ()
    name: str | None = None
    module: str | None = None


class Skip(Exception):
    """Raised inside `find` when the edit does not apply: its message is the one-line reason."""


class Tree:
    """A parsed file with each node's position and parent, and the replacements marked in it."""

    def __init__(self, source: str):
        self.wrapper = MetadataWrapper(cst.parse_module(source))
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.marks: dict = {}   # id(node) -> its replacement: a node, or a list of statements

    def mark(self, node, replacement) -> None:
        """Replace `node` by `replacement`: a node, a list of statements for a statement, or a
        function of the node as updated (its marked children already replaced)."""
        self.marks[id(node)] = replacement

    def line_of(self, node) -> int:
        return self.positions[node].start.line

    def statement(self, line: int):
        """The innermost statement whose lines hold `line`, or None."""
        found = [n for n, p in self.positions.items()
                 if isinstance(n, STATEMENTS) and p.start.line <= line <= p.end.line]
        return min(found, key=lambda n: self.positions[n].end.line - self.positions[n].start.line, default=None)

    def simple(self, line: int):
        """The one small statement (`x += 1`, `f(x)`) of the simple statement line starting at `line`."""
        st = self.statement(line)
        if not isinstance(st, cst.SimpleStatementLine) or self.line_of(st) != line or len(st.body) != 1:
            raise Skip(f"line {line} is not one simple statement")
        return st, st.body[0]

    def written(self, site: Site):
        """The one small statement of the innermost written line this file holds (see `simple`)."""
        if not site.written:
            raise Skip("no written line in this file")
        return self.simple(site.written[-1])

    def block_of(self, node):
        """The statements of the block holding `node` (a statement), or None."""
        body = getattr(self.parents.get(node), "body", None)
        return list(body) if isinstance(body, (list, tuple)) else None

    def in_block(self, block: list, line: int):
        """The statement of `block` whose lines hold `line`, or None."""
        for n in block:
            p = self.positions[n]
            if p.start.line <= line <= p.end.line:
                return n
        return None

    def function_of(self, node):
        """The function definition around `node`, or None at module level."""
        up = self.parents.get(node)
        while up is not None and not isinstance(up, cst.FunctionDef):
            up = self.parents.get(up)
        return up

    def code(self, node) -> str:
        return self.module.code_for_node(node)

    def swapped(self) -> str:
        """The source with every marked node replaced."""
        marks = self.marks

        class Swap(cst.CSTTransformer):
            def on_leave(self, original, updated):
                new = marks.get(id(original))
                if new is None:
                    return updated
                new = new(updated) if callable(new) else new
                return cst.FlattenSentinel(new) if isinstance(new, list) else new
        return self.module.visit(Swap()).code


class Codemod:
    """One edit. Subclasses set `name` and `summary` and write `find(tree, site)`, which marks
    nodes and their replacements (or raises Skip with the reason)."""

    name = ""
    summary = ""

    def find(self, tree: Tree, site: Site) -> None:
        raise NotImplementedError

    def apply(self, source: str, site: Site, filename: str = "<edit>") -> tuple:
        """(the edited source, "") or (None, why in one line): never raises."""
        try:
            tree = Tree(source)
            self.find(tree, site)
            if not tree.marks:
                raise Skip("nothing to edit at these lines")
            new = tree.swapped()
            compile(new, filename, "exec")   # an edit that would not compile is no edit
        except Skip as skip:
            return None, str(skip)
        except Exception as exc:  # noqa: BLE001 - a file or an edit this codemod cannot handle skips it
            first = (str(exc).strip().splitlines() or [""])[0]
            return None, f"{self.name} could not edit {filename}: {type(exc).__name__}: {first}"
        return (None, "the edit changes nothing") if new == source else (new, "")

    def __repr__(self) -> str:
        return f"<codemod {self.name}>"


def parse_statements(code: str, like=None) -> list:
    """Statements parsed from `code`; the first takes `like`'s leading lines (its comments above)."""
    new = list(cst.parse_module(code if code.endswith("\n") else code + "\n").body)
    if like is not None and new:
        new[0] = new[0].with_changes(leading_lines=like.leading_lines)
        if isinstance(like, cst.SimpleStatementLine) and isinstance(new[-1], cst.SimpleStatementLine):
            new[-1] = new[-1].with_changes(trailing_whitespace=like.trailing_whitespace)
    return new


def method(value, name: str):
    """`value.name()`, an operation parenthesised first: `(a + b).detach()`, not `a + b.detach()`."""
    if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not value.lpar:
        value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(cst.Attribute(value, cst.Name(name)))


class OwnBody(cst.CSTVisitor):
    """A visitor of one function's own body: the functions, classes and lambdas inside it left out."""

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False


class Names(cst.CSTVisitor):
    """The Name nodes a node reads (not the attributes after a dot, not keyword names)."""

    def __init__(self):
        self.nodes: list = []

    def visit_Name(self, node) -> None:
        self.nodes.append(node)

    def visit_Attribute(self, node) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node) -> bool:
        node.value.visit(self)
        return False


def read_nodes(node, name: str | None = None) -> list:
    """The Name nodes `node` reads (those of `name` only, if given)."""
    v = Names()
    node.visit(v)
    return [n for n in v.nodes if name is None or n.value == name]


def reads(node) -> set:
    """The names `node` reads."""
    return {n.value for n in read_nodes(node)}


def targets(st) -> set:
    """Names a simple statement binds."""
    out = set()
    if isinstance(st, cst.SimpleStatementLine):
        for small in st.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    out |= reads(t.target)
            elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                out |= reads(small.target)
    return out
