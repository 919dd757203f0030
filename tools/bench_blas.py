"""python -m tools.bench_blas: sgemm against numpy's matmul at the fast
engine's product shapes, and the size where one should hand over to the other.

Each shape is a use of a layer in RunForward: a (width, width + 1) block,
transposed as stored, times a (width + 1, rows) input, into a (width, rows)
output, with numpy's BLAS on one thread as the engine runs it. Both calls are
made on the same arrays in the same process, interleaved round by round; each
figure is the median over rounds. The chosen threshold is the multiply-add
count that minimises the summed time of all shapes when every product at or
above it goes to matmul and every one below to sgemm (fitlab.numerics.blas.
LARGE_PRODUCT). The last line is machine-readable: `crossover chosen=… set=…`.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import timeit

import numpy as np
from scipy.linalg.blas import sgemm

from fitlab.numerics.blas import LARGE_PRODUCT, gemm_arguments, one_blas_thread

WIDTHS = (5, 16, 32, 64, 128, 256)
ROWS = (1, 5, 20, 50, 150, 200)   # batch sizes, and the evaluation's 50 / 150 / 200 rows


def calls(width: int, rows: int) -> tuple:
    """(sgemm call, matmul call, multiply-adds) for one use at this shape."""
    rng = np.random.default_rng(width * 1000 + rows)
    block = rng.standard_normal((width + 1, width), dtype=np.float32)
    use_t = rng.standard_normal((width + 1, rows), dtype=np.float32)
    out = np.empty((width, rows), dtype=np.float32)
    a = block.T
    A, B, C, trans_a, trans_b = gemm_arguments(a, use_t, out)
    return (functools.partial(sgemm, 1.0, A, B, 0.0, C, trans_a, trans_b, 1),
            functools.partial(np.matmul, a, use_t, out=out), width * (width + 1) * rows)


def measure(rounds: int) -> list[tuple[int, int, int, float, float]]:
    """(width, rows, multiply-adds, sgemm seconds, matmul seconds) per shape."""
    results = []
    with one_blas_thread():
        for width in WIDTHS:
            for rows in ROWS:
                s, m, size = calls(width, rows)
                number = max(5, int(2e5 / size))
                ts, tm = [], []
                for _ in range(rounds):
                    ts.append(timeit.timeit(s, number=number) / number)
                    tm.append(timeit.timeit(m, number=number) / number)
                results.append((width, rows, size, statistics.median(ts), statistics.median(tm)))
    return results


def total_seconds(results, threshold: int) -> float:
    """All shapes' time if products of `threshold` multiply-adds or more use matmul."""
    return sum(tm if size >= threshold else ts for _, _, size, ts, tm in results)


def choose(results) -> int:
    """The threshold (a measured size, or one above all) with the least total time;
    the smallest such on a tie."""
    candidates = sorted({size for _, _, size, _, _ in results}) + [max(r[2] for r in results) + 1]
    return min(candidates, key=lambda t: (total_seconds(results, t), t))


def report(results, rounds: int) -> str:
    """The table, the threshold chosen and the one set, and the last line."""
    chosen = choose(results)
    lines = [f"tools.bench_blas: median of {rounds} interleaved rounds, one BLAS thread",
             "", "| width | rows | multiply-adds | sgemm | matmul | sgemm / matmul |",
             "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {w} | {r} | {size:,} | {ts * 1e6:.2f} µs | {tm * 1e6:.2f} µs | {ts / tm:.2f} |"
              for w, r, size, ts, tm in results]
    lines += ["", f"Chosen threshold {chosen:,} multiply-adds: total {total_seconds(results, chosen) * 1e6:.0f} µs; "
              f"set (LARGE_PRODUCT) {LARGE_PRODUCT:,}: {total_seconds(results, LARGE_PRODUCT) * 1e6:.0f} µs; "
              f"all sgemm {total_seconds(results, chosen + 10**12) * 1e6:.0f} µs; "
              f"all matmul {total_seconds(results, 0) * 1e6:.0f} µs.",
              "", f"crossover chosen={chosen} set={LARGE_PRODUCT}"]
    return "\n".join(lines)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41, help="interleaved rounds (at least 5)")
    rounds = max(5, parser.parse_args().rounds)
    print(report(measure(rounds), rounds))


if __name__ == "__main__":
    main()
