"""The fix gallery has a tab of its own in the failure view: the lesson's
first screen, its script and its views are drawn without training a single
fix, and the gallery trains every variant when its tab is opened."""

import ui.tabs.failure.gallery as gallery
from fitlab import Config
from fitlab.failure.fixes import VARIANTS, fix_gallery
from tests.page.helpers import open_page, open_tab
from ui.tabs.failure.gallery import gallery_table

QUERY = {"detach": "false", "width": "6", "lr": "0.07", "epochs": "4"}
CONFIG = Config(detach=False, width=6, lr=0.07, epochs=4)


def test_the_lesson_trains_no_fix_until_the_gallery_tab_is_opened(monkeypatch):
    trained = []
    real = gallery.run_variant
    monkeypatch.setattr(gallery, "run_variant", lambda config, variant: trained.append(variant.name)
                        or real(config, variant))
    at = open_page(timeout=180, **QUERY)
    assert not at.exception and trained == []
    assert [h for h in at.get("html") if 'class="fitlab-script"' in h.proto.body]   # the marked script
    assert "4. The blog's “more vivid example”, run" in [s.value for s in at.subheader]
    assert any("the *Fix gallery* tab runs every candidate fix" in c.value for c in at.caption)
    open_tab(at, "Fix gallery", key="failure_view")
    assert not at.exception and trained == [v.name for v in VARIANTS]
    assert at.table[0].value.equals(gallery_table(fix_gallery(CONFIG)))
    assert "Version ledger" not in " ".join(s.value for s in at.subheader)   # the other tab is closed
    open_tab(at, "Inside the failure", key="failure_view")
    open_tab(at, "Fix gallery", key="failure_view")
    assert trained == [v.name for v in VARIANTS]   # opened again: from the cache
