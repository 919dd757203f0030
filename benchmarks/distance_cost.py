"""What recording student-vs-teacher distances costs, against training itself.

    python benchmarks/distance_cost.py

Trains the largest page net (width 256, shared layer used 8 times, tied and
untied) for a few epochs, then times the distance tracker's records on the
student's starting weights without the previous record's warm start (the
worst case), and prints the ratio per epoch and for a 2000-epoch run
(which the tracker records at only 101 epochs).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from fitlab import Config, train  # noqa: E402
from fitlab.distance import DistanceTracker, recorded_epochs  # noqa: E402
from fitlab.model import build_teacher, reinitialise_as_student, untie  # noqa: E402

EPOCHS = 10


def main() -> None:
    for tied in (True, False):
        config = Config(width=256, shared_repeats=8, epochs=EPOCHS, tied=tied)
        start = time.perf_counter()
        train(config)
        per_epoch = (time.perf_counter() - start) / EPOCHS

        generator = torch.Generator().manual_seed(config.seed)
        teacher = build_teacher(config, generator)
        teacher_layers = teacher.layer_arrays()
        reinitialise_as_student(teacher, generator)
        student = teacher if tied else untie(teacher)
        layers = student.layer_arrays()
        start = time.perf_counter()
        for epoch in range(EPOCHS + 1):
            # A fresh tracker each time: no warm start, the worst case.
            DistanceTracker(teacher_layers, config.shared_repeats, config.epochs).record(epoch, layers)
        per_record = (time.perf_counter() - start) / (EPOCHS + 1)

        full = 2000 * per_epoch
        records = len(recorded_epochs(2000)) * per_record
        print(f"{'tied' if tied else 'untied'}: one record costs {per_record / per_epoch:.2f} "
              f"training epochs; a 2000-epoch run spends {records / full:.1%} of its "
              f"training time on its {len(recorded_epochs(2000))} records")


if __name__ == "__main__":
    main()
