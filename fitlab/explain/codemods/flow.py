"""Codemods that change what crosses from one step to the next: a value detached from the graph
that made it, a fresh forward after a write to the weights, a carried state detached at the batch
boundary. Each changes what is computed (causes.py's RUNS): no reference applies."""

from __future__ import annotations

import libcst as cst

from fitlab.explain.codemods import Codemod, Site, Skip, Tree, method, parse_statements, read_nodes, reads, targets


def _assign(st):
    """The `name = value` of a simple statement line, or None."""
    if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 and isinstance(st.body[0], cst.Assign):
        a = st.body[0]
        if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name):
            return a
    return None


def _set_to_none(tree: Tree) -> set:
    """The names some statement of the file binds to None."""
    return {t.target.value for n in tree.positions if isinstance(n, cst.Assign)
            and isinstance(n.value, cst.Name) and n.value.value == "None"
            for t in n.targets if isinstance(t.target, cst.Name)}


class DetachValue(Codemod):
    """`labels = f(X)` -> `labels = f(X).detach()` at the outermost saved line that is such an assignment."""

    name = "detach_value"
    summary = ("`.detach()` of the value the old graph made, where it is assigned: "
               "`labels = net(X)` -> `labels = net(X).detach()`")

    def find(self, tree: Tree, site: Site) -> None:
        for line in site.saved:
            a = _assign(tree.statement(line))
            if a is not None:
                tree.mark(a.value, method(a.value, "detach"))
                return
        raise Skip("no saved line is an assignment to a name")


class DetachFirstUse(Codemod):
    """`.detach()` on the read of the shared tensor at each line that feeds only the first backward
    (`site.written`, found from the recording: where the first graph used the shared part), the
    tensor's name being the one the built line (`site.saved`) binds. Never where the tensor is made
    (the second loss needs its gradient) nor at a line of the second graph (`site.failed`)."""

    name = "detach_first_use"
    summary = ("`.detach()` where the first backward's loss reads the shared output, which the recording "
               "finds: `bce(D(fake), zeros)` -> `bce(D(fake.detach()), zeros)` (never where `fake` is made: "
               "G's loss needs that gradient)")

    def find(self, tree: Tree, site: Site) -> None:
        if not site.written:
            raise Skip("no line feeds the first backward alone: each use of the shared tensor is also the "
                       "second's (a call both losses go through), so a detach there would cut the second's gradient")
        if not site.saved:
            raise Skip(f"the shared tensor was made in another function than line {site.written[0]}, which "
                       "feeds the first backward: no name there is known to hold it")
        a = _assign(tree.statement(site.saved[-1]))
        if a is None:
            raise Skip(f"line {site.saved[-1]}, which made the shared tensor, binds no one name")
        name = a.targets[0].target.value
        for line in site.written:
            if line in site.failed or line in site.saved:
                raise Skip(f"line {line} also feeds the second backward: a detach there would cut its gradient")
            st = tree.statement(line)
            if not isinstance(st, cst.SimpleStatementLine) or tree.line_of(st) != line:
                raise Skip(f"line {line} is not a simple statement")
            uses = read_nodes(st, name)
            if len(uses) != 1:
                raise Skip(f"line {line} reads `{name}` {len(uses) or 'no'} time{'s' if len(uses) != 1 else ''}: "
                           "the recording names the line that feeds the first backward, not which read does")
            tree.mark(uses[0], method(uses[0], "detach"))


class FreshForward(Codemod):
    """After the statement that wrote the weights (`opt_D.step()`), the assignments from the saved
    line on that the failing backward needs, run again. The write is in the failing line's block
    (before it, or after it in a loop); the saved line in that block or one around it."""

    name = "fresh_forward"
    summary = ("after the write to the weights (`opt_d.step()`), the forward the failing backward needs, "
               "run again (a GAN's G loss from a new `D(fake)`; never G's backward moved before D's step, "
               "which adds G's gradient to D's weights)")

    def find(self, tree: Tree, site: Site) -> None:
        if not (site.saved and site.written and site.failed):
            raise Skip("the saved, written and failed lines are not all in this file")
        fail = tree.statement(site.failed[-1])
        block = tree.block_of(fail) if fail is not None else None
        if block is None:
            raise Skip("the failing line is in no block")

        def first_in(statements: list):
            return next((n for n in (tree.in_block(statements, line) for line in site.saved) if n is not None), None)
        write = next((n for n in (tree.in_block(block, line) for line in site.written) if n is not None), None)
        if write is None or write is fail:
            raise Skip("the write is not a statement of the failing line's block")
        needed = reads(fail)   # what the failing statement needs, through the assignments before it
        for st in reversed(block[:block.index(fail)]):
            if targets(st) & needed:
                needed |= reads(st)
        save, holder = first_in(block), fail
        if save is not None:
            if block.index(save) >= block.index(write):
                raise Skip("the saved line comes after the write")
            segment = block[block.index(save):block.index(write)]
        else:
            while save is None:   # out through the compound statements around the failing line
                up = tree.parents.get(tree.parents.get(holder))
                outer = tree.block_of(up) if isinstance(up, cst.BaseCompoundStatement) else None
                if outer is None:
                    raise Skip("the saved line is in no block around the failing line")
                save, holder = first_in(outer), up
            segment = outer[outer.index(save):outer.index(holder)]
        again = []
        for st in reversed(segment):
            if targets(st) & needed:
                again.insert(0, st)
                needed |= reads(st)
        if save not in again:
            raise Skip("the failing backward does not need the saved line's value")
        again = [st.with_changes(trailing_whitespace=cst.TrailingWhitespace(), leading_lines=[]) for st in again]
        again[0] = again[0].with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(
            "# fitlab-explain --fix: a fresh forward after the write"))])
        tree.mark(write, [write, *again])


class DetachState(Codemod):
    """`h = h.detach()` before the saved statement, for each name it both reads and binds (the state
    carried into the next batch or epoch); an LSTM's pair (a call whose callee's name says lstm):
    `h = tuple(s.detach() for s in h)`. Where no saved line carries a name into itself, the value
    made once and reused by each step is detached where it is assigned (DetachValue)."""

    name = "detach_state"
    summary = ("`h = h.detach()` before the line that carries a state into the next step (an RNN's "
               "hidden state; an LSTM's pair as a tuple), or `.detach()` where a value reused by every step "
               "is made (PPO's old log-probabilities)")

    def find(self, tree: Tree, site: Site) -> None:
        for line in reversed(site.saved):
            st = tree.statement(line)
            if isinstance(st, cst.SimpleStatementLine) and isinstance(st.body[0], cst.Assign):
                value = st.body[0].value
                carried = sorted(targets(st) & reads(value))
                if carried:
                    # An LSTM's state is a pair: each of its tensors detached; a state that starts as
                    # None (`h = None`, for the module's zeros) stays None at the first step.
                    pair = isinstance(value, cst.Call) and "lstm" in tree.code(value.func).lower()
                    empty = _set_to_none(tree)
                    new = parse_statements("\n".join(
                        f"{h} = " + (f"None if {h} is None else " if h in empty else "")
                        + (f"tuple(s.detach() for s in {h})" if pair else f"{h}.detach()") for h in carried))
                    new[0] = new[0].with_changes(leading_lines=st.leading_lines)
                    tree.mark(st, [*new, st.with_changes(leading_lines=[])])
                    return
        # A value computed once and reused by every step (PPO's old log-probabilities): detached
        # where it is assigned.
        DetachValue().find(tree, site)


class UnderNoGrad(Codemod):
    """The write at the written line under `with torch.no_grad():`: autograd does not record it."""

    name = "under_no_grad"
    summary = ("the write under `with torch.no_grad():`: `w -= lr * w.grad` -> `with torch.no_grad():` "
               "and the line under it")

    def find(self, tree: Tree, site: Site) -> None:
        st, _ = tree.written(site)
        tree.mark(st, lambda updated: cst.With(
            items=[cst.WithItem(cst.parse_expression("torch.no_grad()"))],
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]),
            leading_lines=updated.leading_lines))
