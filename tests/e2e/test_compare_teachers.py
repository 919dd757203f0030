"""Compare runs says when the runs it overlays learn different teachers
(issue 32), as the Sweep does: width and seed change the task, lr does not."""

from __future__ import annotations

import pytest

from fitlab import Config, train
from fitlab.compare import STEP_SETTLE
from tools.browsing import expect, open_page, open_tab, rerun_after

pytestmark = pytest.mark.browser

NOTE = "These runs learn different teachers"


def looked_at(page) -> None:
    """The person looks at the run on screen long enough for it to be logged
    as a run of its own, not a step on the way (fitlab.compare.STEP_SETTLE)."""
    page.wait_for_timeout(1000 * STEP_SETTLE + 500)


def test_compare_says_when_the_runs_teachers_differ(pages, server):
    # torch's numbers: width changes the teacher, lr does not.
    teachers = [train(Config(epochs=1, **c)).teacher_params.value.to_numpy() for c in ({}, {"width": 6}, {"lr": 0.02})]
    assert teachers[0].shape != teachers[1].shape and (teachers[0] == teachers[2]).all()
    with pages.page(viewport={"width": 1400, "height": 1000}) as page:
        open_page(page, server)
        looked_at(page)
        width = page.get_by_role("slider", name="Hidden width")
        rerun_after(page, lambda: (width.focus(), width.press("ArrowRight")))     # width 6: a run of its own
        open_tab(page, "Compare runs", page.locator(".st-key-compare_clear"))
        expect(page.get_by_text(NOTE)).to_be_visible()
        expect(page.locator('[data-testid="stAlert"]', has_text=NOTE)).to_contain_text("Hidden width differs,")
    with pages.page(viewport={"width": 1400, "height": 1000}) as page:
        open_page(page, server)
        looked_at(page)
        lr = page.get_by_role("slider", name="Learning rate")
        rerun_after(page, lambda: (lr.focus(), lr.press("ArrowRight")))          # lr 0.02: the same teacher
        expect(lr).to_have_attribute("aria-valuetext", "0.02")
        open_tab(page, "Compare runs", page.locator(".st-key-compare_clear"))
        expect(page.get_by_role("button", name="Remove #2 lr=0.02")).to_be_visible()   # both runs picked
        expect(page.get_by_role("button", name="Remove #1 defaults")).to_be_visible()
        expect(page.get_by_text("Each run its own colour")).to_be_visible()
        expect(page.get_by_text(NOTE)).to_have_count(0)
