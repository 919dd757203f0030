"""Cost of fitlab.explain's recorder: each workload plain and recorded, in this one process.

Rounds interleave plain and recorded runs (so drift hits both alike); prints the medians
and the median of each round's ratio to its own plain run (a ratio of medians mixes the
rounds: on a shared machine one round's plain run and the next one's recorded run can see
different loads). Workloads: a small conv net (batch 64, 50 SGD steps), a small transformer
encoder (2 layers, d=128, 4 heads, sequence 64, batch 16, 10 AdamW steps) and the blog's
tiny net (Linear(10,5) -> ReLU -> shared Linear(5,5) twice -> Linear(5,1), batch 5 over
50 rows, 10 epochs = 100 steps) and a tiny MLP's 2000 steps (4-8-1, batch 8). Budgets: 1.3x on
the realistic loops, 3x on the tiny ones, and never above torch's anomaly mode (timed too).
"contents" is the recorded run with --check-contents (every saved tensor copied when saved and
compared at backward), an opt-in with its own cost, not under the budgets.
"bare" is the same run under the recorder's machinery doing nothing: a function mode that
only passes each call on, and the write kernels (fitlab.explain.writes) reporting to a
recorder that keeps nothing: the floor of the recorder's design, whatever it records.
Registering the write kernels is a fixed cost per recording (not per op), timed apart and
printed beside the ratio, with what it makes of one recorded run.

    python -m tools.bench_explain [--rounds 9] [--threads 1] [--clock cpu|wall] [--no-contents] [WORKLOAD ...]

Times are this process's CPU time by default: on a shared machine the other jobs take the
cores away from both runs unevenly, which wall time counts and CPU time does not.

One intra-op thread by default: on a shared 2-core machine, two OpenMP threads make
the plain run's own time swing by an order of magnitude, which no ratio survives.
"""

import argparse
import contextlib
import math
import statistics
import time
import warnings

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from fitlab.explain import Recorder, writes


def drawn(net: nn.Module, g: torch.Generator) -> nn.Module:
    """net with every parameter drawn from g (a module draws its own from torch's global generator)."""
    with torch.no_grad():
        for p in net.parameters():
            bound = 1 / math.sqrt(p.shape[-1] if p.dim() > 1 else p.numel())
            p.uniform_(-bound, bound, generator=g)
    return net


def conv_net():
    g = torch.Generator().manual_seed(0)
    net = drawn(nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10)), g)
    data = [(torch.randn(64, 1, 28, 28, generator=g), torch.randint(0, 10, (64,), generator=g)) for _ in range(50)]
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def run():
        for x, y in data:
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
    return run


def encoder():
    g = torch.Generator().manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, batch_first=True)
    net = drawn(nn.Sequential(nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)), g)
    head = drawn(nn.Linear(128, 10), g)
    data = [(torch.randn(16, 64, 128, generator=g), torch.randint(0, 10, (16,), generator=g)) for _ in range(10)]
    opt = torch.optim.AdamW([*net.parameters(), *head.parameters()], lr=1e-3)

    def run():
        for x, y in data:
            opt.zero_grad()
            nn.functional.cross_entropy(head(net(x).mean(dim=1)), y).backward()
            opt.step()
    return run


def blog_net():
    g = torch.Generator().manual_seed(0)
    shared = nn.Linear(5, 5)
    net = drawn(nn.Sequential(nn.Linear(10, 5), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(5, 1)), g)
    X = torch.randn(50, 10, generator=g)
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


def tiny_steps():
    g = torch.Generator().manual_seed(0)
    net = drawn(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1)), g)
    x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def run():
        for _ in range(2000):
            opt.zero_grad()
            ((net(x) - y) ** 2).mean().backward()
            opt.step()
    return run


@contextlib.contextmanager
def anomaly():
    """torch's anomaly mode, what the error message suggests: the cost to stay below."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Anomaly Detection has been enabled", once per round
        with torch.autograd.detect_anomaly(check_nan=False):
            yield


class _KeepsNothing:
    def _record_write(self, name, inplace, tensors) -> None:
        pass


class _BareFunction(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def bare():
    """The recorder's function mode and write kernels doing nothing: the floor of its design's cost."""
    nothing = _KeepsNothing()
    writes.start(nothing)
    try:
        with _BareFunction():
            yield
    finally:
        writes.stop(nothing)


WORKLOADS = {"conv_net": ("conv net, batch 64, 50 steps", conv_net),
             "encoder": ("transformer encoder, 10 steps", encoder),
             "blog_net": ("blog tiny net, 100 steps", blog_net),
             "tiny_steps": ("tiny MLP, 2000 steps", tiny_steps)}
CLOCK = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCK["cpu"]


def timed(run, context) -> float:
    start = clock()
    if context is None:
        run()
    else:
        with context():
            run()
    return clock() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", help=f"of {', '.join(WORKLOADS)} (default: all)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCK), default="cpu")
    parser.add_argument("--contents", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the recorder with --check-contents")
    ns = parser.parse_args()
    for key in ns.workloads:
        if key not in WORKLOADS:
            parser.error(f"unknown workload {key!r}: choose from {', '.join(WORKLOADS)}")
    global clock
    clock = CLOCK[ns.clock]
    rounds = ns.rounds
    torch.set_num_threads(ns.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {rounds} interleaved rounds, "
          f"{ns.clock} time")
    start = time.perf_counter()
    writes.written_ops()
    print(f"write kernels: {len(writes.written_ops())} ops, torch's schemas read in "
          f"{(time.perf_counter() - start) * 1e3:.0f} ms (once per process)")
    for key in ns.workloads or WORKLOADS:
        name, make = WORKLOADS[key]
        run = make()
        run()  # warm-up: allocator, kernels, caches
        timed(run, Recorder)
        plain, floor, recorded, kernels, anomalous, contents = [], [], [], [], [], []
        for _ in range(rounds):
            plain.append(timed(run, None))  # under torch's own kernels
            anomalous.append(timed(run, anomaly))
            kernels.append(timed(lambda: None, writes.keep))
            with writes.keep():  # a recording's fixed cost, printed apart: registering the kernels
                floor.append(timed(run, bare))
                recorded.append(timed(run, Recorder))
                if ns.contents:
                    contents.append(timed(run, lambda: Recorder(check_contents=True)))
        p, k = statistics.median(plain), statistics.median(kernels)

        def ratio(runs) -> float:
            return statistics.median(run / alone for run, alone in zip(runs, plain))
        r = ratio(recorded)
        spread = sorted(run / alone for run, alone in zip(recorded, plain))
        c = f"; --check-contents {ratio(contents):4.2f}x" if contents else ""
        print(f"{name:<30} plain {p * 1e3:7.1f} ms   recorded {statistics.median(recorded) * 1e3:7.1f} ms   "
              f"ratio {r:5.2f}x (rounds {spread[0]:.2f}-{spread[-1]:.2f})   (bare {ratio(floor):4.2f}x; "
              f"+ {k * 1e3:.0f} ms per recording = {r + k / p:4.2f}x for one run; "
              f"anomaly mode {ratio(anomalous):4.2f}x{c})")


if __name__ == "__main__":
    main()
