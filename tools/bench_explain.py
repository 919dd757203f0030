"""Cost of fitlab.explain's recorder: each workload plain and recorded, in this one process.

Rounds interleave plain and recorded runs (so drift hits both alike); prints the medians
and their ratio. Workloads: a small conv net (batch 64, 50 SGD steps) and the blog's
tiny net (Linear(10,5) -> ReLU -> shared Linear(5,5) twice -> Linear(5,1), batch 5 over
50 rows, 10 epochs = 100 steps).

    python tools/bench_explain.py [--rounds 9] [--threads 1]

One intra-op thread by default: on a shared 2-core machine, two OpenMP threads make
the plain run's own time swing by an order of magnitude, which no ratio survives.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fitlab.explain import Recorder  # the checkout's package, imported after the path is set


def conv_net():
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10))
    data = [(torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))) for _ in range(50)]
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def run():
        for x, y in data:
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
    return run


def blog_net():
    torch.manual_seed(0)
    shared = nn.Linear(5, 5)
    net = nn.Sequential(nn.Linear(10, 5), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(5, 1))
    X = torch.randn(50, 10)
    y = net(X).detach()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    loss_fn = nn.MSELoss()

    def run():
        for _ in range(10):
            for i in range(0, 50, 5):
                opt.zero_grad()
                loss_fn(net(X[i:i + 5]), y[i:i + 5]).backward()
                opt.step()
    return run


def timed(run, recorded: bool) -> float:
    start = time.perf_counter()
    if recorded:
        with Recorder():
            run()
    else:
        run()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    ns = parser.parse_args()
    rounds = ns.rounds
    torch.set_num_threads(ns.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {rounds} interleaved rounds")
    for name, make in [("conv net, batch 64, 50 steps", conv_net), ("blog tiny net, 100 steps", blog_net)]:
        run = make()
        run()  # warm-up: allocator, kernels, caches
        timed(run, True)
        plain, recorded = [], []
        for _ in range(rounds):
            plain.append(timed(run, False))
            recorded.append(timed(run, True))
        p, r = statistics.median(plain), statistics.median(recorded)
        print(f"{name:<30} plain {p * 1e3:8.1f} ms   recorded {r * 1e3:8.1f} ms   ratio {r / p:5.2f}x")


if __name__ == "__main__":
    main()
