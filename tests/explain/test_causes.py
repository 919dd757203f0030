"""The one list of causes: every key anything names is in it, no text of it gives a harmful hint,
and what it says of version counters is what torch does."""

from __future__ import annotations

import re

import pytest
import torch

from fitlab.explain.causes import BUMPS, CAUSES, FREED_GRAPH, REFERENCE, RETAINED, RUNS
from fitlab.explain.codemods import Codemod
from fitlab.explain.decode import LIKELY_CAUSES


def texts() -> list:
    """(where, text) of every sentence the list holds."""
    out = [("BUMPS", BUMPS), ("FREED_GRAPH", FREED_GRAPH)]
    for c in CAUSES.values():
        out += [(f"{c.key}.{field}", getattr(c, field)) for field in ("sign", "fix", "advice", "changes")]
    return out


def harmful(text: str) -> str | None:
    """Why a hint changes what a correct program computes, or None."""
    flat = " ".join(text.split()).lower()
    # The GAN hint: G's backward before D's step adds G's gradients to D's weights.
    if re.search(r"backward\S*[^.]{0,80}before[^.]{0,40}step", flat) and "adds its gradients" not in flat:
        return "moves a backward before a step without its cost"
    # Rebinding a parameter's name leaves the model's and the optimizer's tensor unupdated.
    if re.search(r"\bp = p -", flat) and "would make a new tensor" not in flat:
        return "rebinds a parameter"
    return None


@pytest.mark.parametrize("where,text", texts(), ids=[w for w, _ in texts()])
def test_no_text_of_the_list_gives_a_harmful_hint(where, text):
    assert harmful(text) is None, where


def test_the_guard_sees_the_hint_the_page_used_to_give():
    old = ("`optimizer.step()` ran between a forward pass and a backward through it. Fix: every backward "
           "that needs the graph before the step, or a fresh forward pass after it.")
    assert harmful(old) is not None


def test_every_decoded_cause_and_every_edit_is_in_the_list():
    for kind, keys in LIKELY_CAUSES.items():
        assert keys and all(k in CAUSES for k in keys), kind
    for c in CAUSES.values():
        assert c.proof in (REFERENCE, RUNS, RETAINED) or c.proof is None and c.codemod is None, c.key
        assert c.codemod is None or isinstance(c.codemod, Codemod) and c.codemod.name and c.codemod.summary, c.key
        assert (c.proof in (RUNS, RETAINED)) == bool(c.changes), c.key
        # A cause without an edit says why in one line; one with an edit needs no such line.
        assert (c.codemod is None) == bool(c.no_edit) and "\n" not in c.no_edit, c.key


def test_which_writes_bump_a_version_is_what_torch_does():
    p = torch.nn.Parameter(torch.randn(3))
    p.sum().backward()
    v = p._version
    torch.optim.SGD([p], lr=0.1, foreach=True).step()
    assert p._version > v and "`optimizer.step()`" in BUMPS
    v = p._version
    p.data.mul_(2)
    assert p._version == v and "`.data`" in BUMPS
    try:
        torch.optim.SGD([p], lr=0.1, fused=True).step()
    except (RuntimeError, TypeError):  # a fused SGD on CPU: torch 2.4 or newer
        pass
    else:
        assert p._version == v and "fused optimizer step" in BUMPS
    with torch.no_grad():
        torch.nn.init.normal_(p)
    assert p._version == v + 1 and "`nn.init.*_`" in BUMPS
    with torch.inference_mode():
        t = torch.ones(2)
    with pytest.raises(RuntimeError):
        t._version  # an inference tensor has no counter to bump
    assert "inference tensor bump none" in BUMPS
