"""docs/explain.md's table of causes is the one list's (tools.causes_table --check)."""

from __future__ import annotations

from fitlab.explain.causes import CAUSES
from tools import causes_table


def test_the_documents_causes_table_is_generated_from_the_registry():
    assert causes_table.main(["--check"]) == 0


def test_the_table_has_a_row_per_cause_with_its_codemod_and_verdict():
    rows = causes_table.table().splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == [f"| `{k}`" for k in CAUSES]
    for row, c in zip(rows, CAUSES.values()):
        assert (c.codemod is None or f"`{c.codemod.name}`" in row) and ("proved" in row) == (c.proof == "reference")


def test_a_table_edited_by_hand_fails_the_check(tmp_path, monkeypatch):
    doc = tmp_path / "explain.md"
    doc.write_text(causes_table.with_table(causes_table.DOC.read_text()).replace("| `index_assignment`", "| `x`"))
    monkeypatch.setattr(causes_table, "DOC", doc)
    assert causes_table.main(["--check"]) == 1
