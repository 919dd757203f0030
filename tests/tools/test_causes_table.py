"""docs/explain.md's table of causes is the one list's (tools.causes_table --check)."""

from __future__ import annotations

from fitlab.explain.causes import CAUSES, NEIGHBOURS, UNREFERENCED
from tools import causes_table


def test_the_documents_causes_table_is_generated_from_the_registry():
    assert causes_table.main(["--check"]) == 0


def test_the_table_has_a_row_per_cause_with_its_codemod_and_verdict():
    rows = causes_table.table().splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == [f"| `{k}`" for k in CAUSES]
    for row, c in zip(rows, CAUSES.values()):
        assert (c.codemod is None or f"`{c.codemod.name}`" in row) and ("no edit" in row) == (c.codemod is None)
        provable = c.proof == "reference" and c.key not in NEIGHBOURS or c.proof == "retained"
        assert ("proved" in row) == (provable and c.codemod is not None)
        # Without an edit, the row says why (the cause's one line).
        assert c.codemod is not None or f"no mechanical edit: {c.no_edit} |" in row


def test_a_gan_s_shared_forward_is_proved_against_the_program_with_its_graphs_kept():
    row = {r.split(" | ")[0]: r for r in causes_table.table().splitlines()[2:]}["| `freed_shared_forward`"]
    assert "`detach_first_use`" in row and "| proved: " in row and "retain_graph=True" in row


def test_a_neighbouring_causes_reference_edit_can_only_run_as_no_reference_exists():
    rows = {r.split(" | ")[0]: r for r in causes_table.table().splitlines()[2:]}
    for key in ("leaf_accumulate", "function_view_write"):
        assert key in NEIGHBOURS and CAUSES[key].proof == "reference" and CAUSES[key].codemod is not None
        assert rows[f"| `{key}`"].endswith(f"| runs: no reference applies, because {UNREFERENCED} |")


def test_a_table_edited_by_hand_fails_the_check(tmp_path, monkeypatch):
    doc = tmp_path / "explain.md"
    doc.write_text(causes_table.with_table(causes_table.DOC.read_text()).replace("| `index_assignment`", "| `x`"))
    monkeypatch.setattr(causes_table, "DOC", doc)
    assert causes_table.main(["--check"]) == 1
