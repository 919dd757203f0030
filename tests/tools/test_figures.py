"""The documents' figures are tools.figures', and the sentences issue 21
corrected say what torch and fitlab do, at non-default settings too."""

import re
from pathlib import Path

import pytest
import torch

from fitlab import Config
from fitlab.config import SETTINGS
from fitlab.failure.fixes import VARIANTS, run_variant
from tools import figures as figures_tool
from ui.words import SETTING_WORDS

ROOT = Path(__file__).resolve().parents[2]


def read(document):
    return re.sub(r"\s+", " ", (ROOT / document).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def values():
    return figures_tool.figures()


def test_every_figure_the_documents_quote_is_the_one_tools_figures_computes(values):
    assert figures_tool.disagreements(values) == []


def test_a_document_quoting_another_number_is_named(values):
    wrong = {**values, "train_fall": "1,125"}
    assert figures_tool.disagreements(wrong) == [
        "docs/student.md: 'the layers come {closer_first}, {closer_shared} and {closer_last} closer "
        "({closer_all} in all) while the train loss falls 1,125-fold'".format(**values)]


def test_readmes_table_of_controls_has_one_row_per_declared_setting_in_the_sidebars_words():
    table = figures_tool.controls_figures()["controls_table"]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [row[1] for row in rows] == [f"`{field}`" for field in SETTING_WORDS]
    assert sorted(row[1].strip("`") for row in rows) == sorted(SETTINGS)
    by_field = {row[1].strip("`"): row for row in rows}
    assert by_field["width"][:4] == ["Hidden width", "`width`", "5",
                                     "1 to 256 (stops: 1 to 16, 24, 32, 48, 64, 96, 128, 192, 256)"]
    assert by_field["n_train"][2:4] == ["50", "1 to n_samples − 1"]
    assert by_field["batch_size"][3] == "1 to n_train, at most 10,000"
    assert by_field["engine"][:4] == ["Advanced › Engine", "`engine`", "fast", "fast / autograd"]
    assert by_field["in_features"][0] == "(library only)"
    assert table in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_readme_without_a_declared_settings_row_is_named(values):
    wider = values["controls_table"] + "\n| (library only) | `weight_decay` | 0 | 0 to 1 |  |"
    wrong = [line for line in figures_tool.disagreements({**values, "controls_table": wider})
             if "weight_decay" in line]
    assert len(wrong) == 1 and wrong[0].startswith("README.md: ")


def test_the_distances_are_quoted_to_the_hundredth_not_rounded_to_1_6_6_and_13(values):
    assert (values["closer_first"], values["closer_shared"], values["closer_last"]) == ("1.73 %", "6.11 %", "12.58 %")
    assert "1.6 %, 6 % and 13 %" not in read("docs/student.md")


def test_the_sweep_is_said_to_match_its_single_runs_to_a_measured_difference_not_to_equal_them(values):
    library = read("docs/library.md")
    assert "history equals its single run" not in library
    assert float(values["sweep_relative_difference"]) > 0   # not equal: float32 in another order


@pytest.mark.parametrize("measured", [3.18e-6, 3.69e-6, 4.35e-6, 9.99e-6, 3e-6])
def test_an_at_most_figure_is_rounded_up_never_below_what_was_measured(measured):
    # 3.18e-6 (one OpenBLAS kernel's worst) once read "at most 3e-6".
    stated = float(figures_tool._at_most(measured))
    assert measured <= stated < 2 * measured


def test_the_sgemm_sentence_is_the_measured_range_not_half_the_cost():
    library = read("docs/library.md")
    assert "half numpy matmul's per-call cost" not in library
    assert "measured by `python -m tools.bench_blas` in one process" in library


def test_no_unreproduced_example_and_no_unsourced_superlative():
    assert "seed 747" not in read("docs/library.md")
    assert "most searched" not in read("README.md")
    assert "ten times the run" not in read("docs/diagnosis.md")


def saved_then_written(write):
    """torch's message when a tensor saved by mul is then written by `write`."""
    w = torch.randn(2, requires_grad=True)
    b = torch.randn(5, requires_grad=True) * 2
    saved = b[1:3]
    loss = (saved * w).sum()
    write(b, saved)
    with pytest.raises(RuntimeError) as raised:
        loss.backward()
    return str(raised.value)


def test_a_saved_slice_written_in_place_reads_as_strided_as_the_docs_say():
    assert "output 0 of AsStrided," in saved_then_written(lambda base, view: view.mul_(3))
    assert "output 0 of AsStrided," in saved_then_written(lambda base, view: base.add_(1))
    assert "a saved slice `b[1:3]` too" in read("docs/diagnosis.md")
    assert "any saved view written in place reads so, a slice too" in read("README.md")


def test_torch_2_13_drops_backward0_from_every_nodes_name_as_the_docs_say():
    x = torch.randn(4, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"output 0 of Sigmoid, is at version 1"):
        y.sum().backward()
    assert "drops \"Backward0\" from every node's name (`Sigmoid`, `Relu`, `AsStrided`)" in read("docs/diagnosis.md")
    assert "Torch 2.x names such a view" not in read("docs/diagnosis.md")


def test_a_data_write_bumps_no_version_so_the_readme_says_not_every_write_does():
    layer = torch.nn.Linear(3, 2)
    before = layer.weight._version
    layer.weight.data.mul_(2)
    assert layer.weight._version == before
    bias_before = layer.bias._version
    with torch.no_grad():
        torch.nn.init.zeros_(layer.bias)
    assert layer.bias._version == bias_before + 1
    fused = torch.nn.Parameter(torch.randn(3))
    fused.sum().backward()
    torch.optim.SGD([fused], lr=0.1, fused=True).step()
    assert fused._version == 0
    readme = read("README.md")
    assert "every in-place write bumps" not in readme and "nor does a fused optimiser step" in readme
    assert "not every write does: one through `.data` does not" in readme


@pytest.mark.parametrize("batch_size", [5, 50])
def test_the_attached_variants_fail_at_the_second_step_whatever_the_batch_size(batch_size):
    config = Config(batch_size=batch_size, epochs=3)
    stopped = [run_variant(config, v) for v in VARIANTS if v.key in (
        "deep_copy", "data_reinit", "identity_hooks")]
    steps = {(o.error.epoch - 1) * config.batches_per_epoch + o.error.batch for o in stopped}
    assert steps == {2}
    assert "fail at the second step" in read("docs/diagnosis.md")
    assert "fails at the second step" in read("docs/diagnosis.md")


def test_with_one_step_the_attached_variants_train_to_the_end_as_the_docs_say():
    config = Config(epochs=1, batch_size=50)   # issue 33: one step, no second backward to fail
    assert config.epochs * config.batches_per_epoch == 1
    trained = [run_variant(config, v) for v in VARIANTS if v.key in ("deep_copy", "data_reinit", "identity_hooks")]
    assert all(o.error is None for o in trained)
    assert "there is no second backward and all three train to the end" in read("docs/diagnosis.md")
