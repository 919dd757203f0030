"""Each cause's codemod on its fixture pairs: tests/explain/codemods/CAUSE-CASE.in.py becomes
CAUSE-CASE.out.py under CAUSES[CAUSE].codemod, or, with no .out.py, is refused for the reason its
`# refuses:` line gives. No torch runs and no process starts: the codemods only edit text.

The site comes from the fixture's markers, as in tests/explain/scripts: `# saved-here`,
`# written-here`, `# failed-here` on a line; `# name: N` (the name holding the saved tensor) and
`# module: C` (the class of the in-place module) on lines of their own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fitlab.explain.causes import CAUSES
from fitlab.explain.codemods import Site

HERE = Path(__file__).resolve().parent / "codemods"
CASES = sorted(p.name.removesuffix(".in.py") for p in HERE.glob("*.in.py"))


def site_of(text: str) -> Site:
    """The Site a fixture's markers give."""
    marks = {k: tuple(i for i, line in enumerate(text.splitlines(), 1) if f"{k}-here" in line)
             for k in ("saved", "written", "failed")}
    name = re.search(r"^# name: (\w+)$", text, re.M)
    module = re.search(r"^# module: (\w+)$", text, re.M)
    return Site(**marks, name=name and name.group(1), module=module and module.group(1))


@pytest.mark.parametrize("case", CASES)
def test_each_causes_codemod_turns_its_fixture_into_the_expected_file_or_refuses_saying_why(case):
    cause = CAUSES[case.split("-")[0]]
    text = (HERE / f"{case}.in.py").read_text()
    new, why = cause.codemod.apply(text, site_of(text), f"{case}.in.py")
    out = HERE / f"{case}.out.py"
    if out.exists():
        assert (new, why) == (out.read_text(), "")
    else:
        refuses = re.search(r"^# refuses: (.+)$", text, re.M).group(1)
        assert new is None and refuses in why


def test_every_cause_with_a_codemod_has_a_fixture_pair():
    covered = {c.split("-")[0] for c in CASES if (HERE / f"{c}.out.py").exists()}
    assert {k for k, c in CAUSES.items() if c.codemod is not None} <= covered


def test_a_replacement_that_would_not_compile_is_no_edit_and_never_raises():
    # `f(a.b=1)` is what cloning a keyword's name used to make of `f(a=a)` ("expression cannot contain
    # assignment"): a codemod whose output does not compile returns None and the reason.
    new, why = CAUSES["clone_before_write"].codemod.apply("out = f(a=a)  # saved-here\n", Site(saved=(1,), name="a"))
    assert new == "out = f(a=a.clone())  # saved-here\n" and why == ""
    codemod = CAUSES["augmented_assignment"].codemod
    new, why = codemod.apply("y += (1\n", Site(written=(1,)), "broken.py")
    assert new is None and why.startswith("out_of_place could not edit broken.py: ParserSyntaxError")


def test_an_error_inside_a_codemod_is_a_one_line_reason_not_an_exception():
    class Broken(CAUSES["augmented_assignment"].codemod.__class__):
        name = "broken"

        def find(self, tree, site):
            raise RuntimeError("a node this codemod never met\nsecond line")
    new, why = Broken().apply("y += 1\n", Site(written=(1,)), "train.py")
    assert (new, why) == (None, "broken could not edit train.py: RuntimeError: a node this codemod never met")
