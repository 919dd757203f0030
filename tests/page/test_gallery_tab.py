"""The fix gallery has a tab of its own in the failure view: the lesson's
first screen, its script and its views are drawn without training a single
fix, and the gallery trains every variant when its tab is opened; its table
quotes torch's outcomes and words the library's verdicts."""

import pytest

import ui.tabs.failure.gallery as gallery
from fitlab import Config
from fitlab.failure.fixes import BLOG, DETACH, VARIANTS, fix_gallery, run_variant, verdict
from tests.lib.failure.test_replay import SMALL
from tests.page.helpers import open_page, open_tab
from ui.tabs.failure.gallery import VARIANT_NAMES, gallery_messages, gallery_table, verdict_text

QUERY = {"detach": "false", "width": "6", "lr": "0.07", "epochs": "4"}
CONFIG = Config(detach=False, width=6, lr=0.07, epochs=4)


@pytest.mark.slow  # the lesson's script runs in a worker process
def test_the_lesson_trains_no_fix_until_the_gallery_tab_is_opened(monkeypatch):
    trained = []
    real = gallery.run_variant
    monkeypatch.setattr(gallery, "run_variant", lambda config, variant: trained.append(variant.key)
                        or real(config, variant))
    at = open_page(timeout=180, **QUERY)
    assert not at.exception and trained == []
    assert [h for h in at.get("html") if 'class="fitlab-script"' in h.proto.body]   # the marked script
    assert "4. The blog's “more vivid example”, run" in [s.value for s in at.subheader]
    assert any("the *Fix gallery* tab runs every candidate fix" in c.value for c in at.caption)
    open_tab(at, "Fix gallery", key="failure_view")
    assert not at.exception and trained == [v.key for v in VARIANTS]
    assert at.table[0].value.equals(gallery_table(fix_gallery(CONFIG)))
    assert "Version ledger" not in " ".join(s.value for s in at.subheader)   # the other tab is closed
    open_tab(at, "Inside the failure", key="failure_view")
    open_tab(at, "Fix gallery", key="failure_view")
    assert trained == [v.key for v in VARIANTS]   # opened again: from the cache


@pytest.fixture(scope="module")
def small_gallery():
    """The fix gallery at tests/lib/failure/test_replay.py's SMALL settings, by the page's variant names."""
    return {VARIANT_NAMES[o.variant.key]: o for o in fix_gallery(Config(detach=False, **SMALL))}


def test_gallery_table_quotes_outcomes_and_judges_them(small_gallery):
    outcomes = tuple(small_gallery.values())
    table = gallery_table(outcomes).set_index("variant")
    assert list(table.columns) == ["code change", "outcome", "verdict"]
    blog = small_gallery["as the blog wrote it"]
    assert table.loc["as the blog wrote it", "outcome"] == f"RuntimeError: {blog.error.message}"
    # Torch's long message once: the rows that repeat it name it instead.
    assert sum(blog.error.message in text for text in table.outcome) == 1
    assert table.loc[".clone() the labels", "outcome"] == "RuntimeError: the blog's message, word for word"
    assert table.loc[".clone() the labels", "verdict"].startswith("✗ no fix: the blog's very error")
    assert table.loc["labels under torch.no_grad()", "verdict"] == "✓ fixes it; numbers identical to .detach()"
    last = small_gallery[".detach() the labels"].history.iloc[-1]
    assert f"{last.train_loss:.6g}" in table.loc[".detach() the labels", "outcome"]
    # The time ratio is gone: one sample of a noisy clock (it once read 0.8× for strictly more work).
    retained = table.loc["deep copy + retain_graph=True", "verdict"]
    assert retained.startswith("⚠ runs; numbers identical to .detach(), but:") and "× the time" not in retained
    assert "teacher's weights get gradients too" in retained
    for name in ("re-init through .data", "identity saved-tensor hooks"):
        assert table.loc[name, "verdict"].startswith(
            "✗ no fix: the first step passes, then it fails at epoch 1, batch 2")
        assert "all the labels hang off one graph" in table.loc[name, "verdict"]
        assert "gradients are wrong" in table.loc[name, "verdict"]
    assert "all the labels hang off one graph" in table.loc["deep copy of the teacher", "verdict"]
    assert "teacher's weights got gradients" in table.loc["deep copy of the teacher", "verdict"]
    hooked = small_gallery["identity hooks + retain_graph=True"]
    assert hooked.error is None and not hooked.history.equals(small_gallery[".detach() the labels"].history)
    assert table.loc["identity hooks + retain_graph=True", "verdict"].startswith("⚠ runs, but:")
    assert "trains on wrong gradients to the end" in table.loc["identity hooks + retain_graph=True", "verdict"]
    assert all(v[0] in "✓✗⚠" for v in table.verdict)
    assert gallery_messages(outcomes) == [f"RuntimeError: {blog.error.message}",
                                          f"RuntimeError: {small_gallery['deep copy of the teacher'].error.message}"]


def test_gallery_table_from_unpickled_outcomes(small_gallery):
    import pickle

    outcomes = tuple(small_gallery.values())
    assert gallery_table(pickle.loads(pickle.dumps(outcomes))).equals(gallery_table(outcomes))


def test_the_walked_graph_is_said_with_the_runs_own_number_of_labels():
    config = Config(detach=False, n_samples=120, epochs=2)
    retained = next(v for v in VARIANTS if v.retain_graph and v.copy_teacher)
    blog, detached, outcome = (run_variant(config, v) for v in (BLOG, DETACH, retained))
    text = verdict_text(verdict(outcome, blog, detached), outcome, detached)
    assert "walks the teacher's graph of all 120 labels again" in text


def test_every_variant_has_a_name_on_the_page():
    assert list(VARIANT_NAMES) == [v.key for v in VARIANTS]
    assert len(set(VARIANT_NAMES.values())) == len(VARIANTS)
