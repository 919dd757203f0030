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


def sweep_figures() -> dict[str, str]:
    """How far a sweep's histories are from their single runs."""
    from fitlab import Config, sweep, train

    worst = 0.0
    for config, history in sweep(Config(**SWEEP_BASE), **SWEEP_AXES).items():
        single = train(config).history
        for column in ("train_loss", "test_loss"):
            a, b = history[column].to_numpy(), single[column].to_numpy()
            worst = max(worst, float(np.max(np.abs(a - b) / np.abs(b))))
    return {"sweep_relative_difference": f"{worst:.0e}".replace("e-0", "e-")}


def budget_figures() -> dict[str, str]:
    """The work budget's estimate of the retain_graph variant's extra walk."""
    from fitlab import Config
    from fitlab.serving.budget import estimated_seconds, walked_graph_seconds

    config = Config(batch_size=1, width=256)
    return {"walk_times_run": f"{walked_graph_seconds(config) / estimated_seconds(config, 'autograd'):.1f}"}


def recording_figures() -> dict[str, str]:
    """How many epochs the distances are recorded at, raw and matched."""
    from fitlab.student.distance import MAX_MATCHED_POINTS, MAX_POINTS, matched_points

    # The documents name width 256 and width 8's exhaustive search together.
    fewest = {matched_points(256), matched_points(8)}
    return {"raw_points": f"{MAX_POINTS}", "matched_points": f"{MAX_MATCHED_POINTS}",
            "fewest_matched_points": " or ".join(str(n) for n in sorted(fewest))}


def figures() -> dict[str, str]:
    """Every figure, by name."""
    return {**defaults_figures(), **sweep_figures(), **budget_figures(), **recording_figures()}


# (document, sentence with {figure} fields): each must appear in its
# document once the figures are filled in (line breaks read as spaces).
QUOTES = [
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
    ("docs/diagnosis.md", "at batch 1 and width 256 the estimate is {walk_times_run}× the run"),
]


def _read(document: str) -> str:
    return re.sub(r"\s+", " ", (ROOT / document).read_text(encoding="utf-8"))


def disagreements(values: dict[str, str]) -> list[str]:
    """Each quoted sentence missing from its document, filled in."""
    return [f"{document}: {template.format(**values)!r}"
            for document, template in QUOTES if template.format(**values) not in _read(document)]


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
