"""python -m tools.figures: every figure README.md and docs/ quote (timings
and bench ratios excepted: tools.bench and tools.bench_blas measure those),
computed from fitlab, and where each document says it.

`python -m tools.figures` prints each figure; `--check` also finds every
quoted sentence in its document, with the figures filled in, and exits 1
naming any document that disagrees (tests/tools/test_figures.py runs the check).
Figures are written as the documents write them: a minus sign as "−",
thousands with commas.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# The sweep whose histories are compared with their single runs.
SWEEP_BASE = {"epochs": 30}
SWEEP_AXES = {"lr": [0.003, 0.01, 0.05], "seed": [0, 1, 2]}


def _minus(text: str) -> str:
    return text.replace("-", "−")


def defaults_figures() -> dict[str, str]:
    """The default run's: its fit against the constant, the fall of its
    loss, the blog's test figure, its distances to the teacher."""
    from fitlab import Config, train

    run = train(Config())
    base, last, first = run.baseline, run.history.iloc[-1], run.history.iloc[0]
    n_batches = math.ceil(run.config.n_test / run.config.batch_size)
    raw = run.distances.pivot(index="epoch", columns="layer", values="raw")
    closer = 1 - raw.iloc[-1] / raw.iloc[0]
    total = np.sqrt((raw ** 2).sum(axis=1))
    matched = run.distances[run.distances.epoch == run.config.epochs]
    return {
        "test_times_constant": f"{last.test_loss / base.test_mse:.2g}",
        "test_r2": _minus(f"{base.r_squared(last.test_loss, 'test'):.2f}"),
        "train_fall": f"{first.train_loss / last.train_loss:,.0f}",
        "train_mse": f"{last.train_loss:.3g}",
        "constant_train_mse": f"{base.train_mse:.3g}",
        "test_batches": f"{n_batches}",
        "blog_figure_times_true": f"{run.blog_test_loss / last.test_loss:.0f}",
        "closer_first": f"{closer['first']:.2%}".replace("%", " %"),
        "closer_shared": f"{closer['shared']:.2%}".replace("%", " %"),
        "closer_last": f"{closer['last']:.2%}".replace("%", " %"),
        "closer_all": f"{1 - total.iloc[-1] / total.iloc[0]:.2%}".replace("%", " %"),
        "matched_squared": f"{(matched.matched ** 2).sum():.2f}",
        "raw_squared": f"{(matched.raw ** 2).sum():.2f}",
    }


def _at_most(x: float) -> str:
    """x rounded *up* to one significant digit ("4e-6" for 3.2e-6): the
    documents say "at most", which a figure rounded to nearest can break."""
    if x == 0:
        return "0"
    exponent = math.floor(math.log10(x))
    digit = math.ceil(round(x / 10 ** exponent, 9))
    if digit == 10:
        digit, exponent = 1, exponent + 1
    return f"{digit}e{exponent}"


def sweep_figures() -> dict[str, str]:
    """How far a sweep's histories are from their single runs: float32 in
    another order, so the figure depends on the CPU's OpenBLAS kernel
    (docs/measurements/library.md)."""
    from fitlab import Config, sweep, train

    worst = 0.0
    for config, history in sweep(Config(**SWEEP_BASE), **SWEEP_AXES).items():
        single = train(config).history
        for column in ("train_loss", "test_loss"):
            a, b = history[column].to_numpy(), single[column].to_numpy()
            worst = max(worst, float(np.max(np.abs(a - b) / np.abs(b))))
    return {"sweep_relative_difference": _at_most(worst)}


def budget_figures() -> dict[str, str]:
    """The work budget's estimates: the retain_graph variant's extra walk,
    the issue's link as a run and as a 16 × 16 sweep, the gallery at the
    page's costliest settings."""
    from fitlab import Config
    from fitlab.failure.fixes import gallery_config, gallery_seconds
    from fitlab.serving.budget import estimated_seconds, sweep_seconds, walked_graph_seconds
    from fitlab.sweeps import grid

    config = Config(batch_size=1, width=256)
    link = Config(width=256, shared_repeats=3, n_train=199, batch_size=199, epochs=445)
    swept = grid(link, lr=[0.001 * (i + 1) for i in range(16)], seed=list(range(16)))
    costliest = gallery_config(Config(width=256, shared_repeats=8, n_train=199, batch_size=1,
                                      epochs=2000, detach=False))
    return {"walk_times_run": f"{walked_graph_seconds(config) / estimated_seconds(config, 'autograd'):.1f}",
            "link_run_seconds": f"{estimated_seconds(link):.0f}",
            "link_sweep_seconds": f"{round(sweep_seconds(swept), -1):,.0f}",
            "costliest_gallery_epochs": f"{costliest.epochs} epoch{'s' if costliest.epochs != 1 else ''}",
            "costliest_gallery_seconds": f"{gallery_seconds(costliest):.2f}"}


def recording_figures() -> dict[str, str]:
    """How many epochs the distances are recorded at, raw and matched."""
    from fitlab.student.distance import MAX_MATCHED_POINTS, MAX_POINTS, matched_points

    # The documents name width 256 and width 8's exhaustive search together.
    fewest = {matched_points(256), matched_points(8)}
    return {"raw_points": f"{MAX_POINTS}", "matched_points": f"{MAX_MATCHED_POINTS}",
            "fewest_matched_points": " or ".join(str(n) for n in sorted(fewest))}


def explain_figures() -> dict[str, str]:
    """How many aten ops the explain tool's recorder wraps, in this torch's build."""
    import torch

    from fitlab.explain.writes import written_ops

    return {"written_ops": f"{len(written_ops())}", "torch_build": torch.__version__}


def _number(value) -> str:
    """A bound as the README writes it: 20,000, 1e-6, 10."""
    return f"{value:,}" if isinstance(value, int) else f"{value:g}".replace("e-0", "e-")


def _allowed(declared, settings) -> str:
    """The values a setting takes, in words: its range (a bound set by
    another setting named), its choices, or on / off; its stops."""
    from ui.words import stops_in_words

    if declared.kind == "bool":
        return "on / off"
    if declared.kind == "choice":
        return " / ".join(declared.choices)
    low, high = declared.bounds
    allowed = f"{_number(low)} to {_number(high)}"
    if declared.at_most is not None:
        other, offset = declared.at_most
        allowed = f"{_number(low)} to {other}" + (f" − {-offset}" if offset < 0 else f" + {offset}" if offset else "")
        if high < settings[other].bounds[1] + offset:  # its own bound is the lower one for some values of `other`
            allowed += f", at most {_number(high)}"
    return allowed + (f" (stops: {stops_in_words(declared.stops)})" if declared.stops else "")


def _default(declared) -> str:
    if declared.kind == "bool":
        return "on" if declared.default else "off"
    return declared.default if declared.kind == "choice" else _number(declared.default)


def controls_figures() -> dict[str, str]:
    """README's table of the settings: one row per declared setting
    (fitlab.config.SETTINGS), in the sidebar's order and words (ui.words),
    the library's own settings last."""
    from fitlab.config import SETTINGS
    from ui.words import FIELD_LABELS, SETTING_WORDS

    rows = ["| control | Config field | default | allowed |", "| --- | --- | --- | --- |"]
    for field, words in SETTING_WORDS.items():
        declared = SETTINGS[field]
        control = FIELD_LABELS[field] if words.group is not None else "(library only)"
        rows.append(f"| {control} | `{field}` | {_default(declared)} | {_allowed(declared, SETTINGS)} |")
    return {"controls_table": "\n".join(rows)}


def figures() -> dict[str, str]:
    """Every figure, by name."""
    return {**defaults_figures(), **sweep_figures(), **budget_figures(), **recording_figures(),
            **explain_figures(), **controls_figures()}


# (document, sentence with {figure} fields): each must appear in its
# document once the figures are filled in (line breaks read as spaces).
# README's table of controls is one such figure, made from the declarations.
QUOTES = [
    ("README.md", "{controls_table}"),
    ("README.md", "is {test_times_constant}× that of predicting the training labels' mean (R² {test_r2})"),
    ("README.md", "adds up the {test_batches} per-batch mean losses instead of averaging them: "
                  "{blog_figure_times_true} times the true test MSE"),
    ("docs/student.md", "the layers come {closer_first}, {closer_shared} and {closer_last} closer "
                        "({closer_all} in all) while the train loss falls {train_fall}-fold"),
    ("docs/student.md", "the student's train MSE ({train_mse}) is above the constant predictor's "
                        "({constant_train_mse})"),
    ("docs/student.md", "at the defaults the final student's squared distance is {matched_squared} "
                        "matched against {raw_squared} raw"),
    ("docs/student.md", "The raw distance is recorded at up to {raw_points} evenly spaced epochs; the matched "
                        "one, which costs far more, at up to {matched_points} of them, down to "
                        "{fewest_matched_points} for the costliest matchings (the widest nets, and the exhaustive "
                        "search at width 8)"),
    ("docs/library.md", "differs from its single run by at most {sweep_relative_difference} relative"),
    ("docs/explain.md", "{written_ops} ops in torch {torch_build}: the count depends on the version and the build"),
    ("docs/diagnosis.md", "at batch 1 and width 256 the estimate is {walk_times_run}× the run"),
    ("docs/robustness.md", "as one run (about {link_run_seconds} s estimated) but over 16 lr × 16 seeds is "
                           "estimated at about {link_sweep_seconds} s"),
    ("docs/measurements/robustness.md", "(the code of today estimates the same settings at "
                                        "{costliest_gallery_epochs}, {costliest_gallery_seconds} s:"),
]


def _read(document: str) -> str:
    return re.sub(r"\s+", " ", (ROOT / document).read_text(encoding="utf-8"))


def disagreements(values: dict[str, str]) -> list[str]:
    """Each quoted sentence missing from its document, filled in (a line
    break in a figure, as in a table's, reads as a space too)."""
    return [f"{document}: {template.format(**values)!r}" for document, template in QUOTES
            if re.sub(r"\s+", " ", template.format(**values)) not in _read(document)]


def main() -> None:
    """Print the figures; with --check, exit 1 on any disagreeing document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check the documents' quotes")
    values = figures()
    for name, value in values.items():
        print(f"{name} = {value}")
    if parser.parse_args().check:
        wrong = disagreements(values)
        for line in wrong:
            print(f"not found in {line}")
        sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
