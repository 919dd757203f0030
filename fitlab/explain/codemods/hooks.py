"""A forward hook that writes the module's output in place: its out-of-place form, returned.

torch passes a forward hook's return value on as the module's output (nn.Module.register_forward_hook:
"hook(module, args, output) -> None or modified output"), so `output.clamp_(max=1)` becomes
`output = output.clamp(max=1)` and the hook ends in `return output`: the next layer gets the same
values, and the tensor the module's own op saved keeps its own. Only where the written name is the
hook's last parameter (its output) and the hook returns nothing anywhere (a `return` would skip the
new one, or return another output)."""

from __future__ import annotations

from fitlab.explain.codemods import Codemod, OwnBody, Site, Skip, Tree, parse_statements
from fitlab.explain.codemods.lines import out_of_place


class _Returns(OwnBody):
    """Whether a function's own body returns."""

    def __init__(self):
        self.found = False

    def visit_Return(self, node) -> None:
        self.found = True


class ReturnFromHook(Codemod):
    """The forward hook's in-place write of its output as the out-of-place form, returned."""

    name = "return_from_hook"
    summary = ("in a forward hook, `output.clamp_(max=1)` -> `output = output.clamp(max=1)` and "
               "`return output` at the hook's end: torch passes the returned tensor on as the module's output")

    def find(self, tree: Tree, site: Site) -> None:
        st, small = tree.written(site)
        fn = tree.function_of(st)
        params = [*fn.params.posonly_params, *fn.params.params] if fn is not None else []
        if len(params) < 3:
            raise Skip(f"line {site.written[-1]} is not in a forward hook (module, args, output)")
        output = params[-1].name.value
        new = out_of_place(tree, small, output)
        returns = _Returns()
        fn.body.visit(returns)
        if returns.found:
            raise Skip(f"{fn.name.value}() returns already: a new `return {output}` would not always run")
        tree.mark(st, parse_statements(new, st))
        tree.mark(fn.body, lambda body: body.with_changes(
            body=[*body.body, *parse_statements(f"return {output}")]))
