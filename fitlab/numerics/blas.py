"""numpy's BLAS thread count while fitlab computes (torch's is in fitlab.numerics.threads),
and BLAS's sgemm called on numpy's C-ordered arrays."""

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator

import numpy as np
from scipy.linalg.blas import sgemm
from threadpoolctl import ThreadpoolController

# From this many multiply-adds numpy's matmul is the faster call (its
# OpenBLAS build); below it, sgemm's smaller per-call cost matters more.
# Measured by tools.bench_blas at the engine's shapes, one BLAS thread: sgemm
# takes 0.3-0.5 of matmul's time at width 5-64 and batch 5, 0.91 at width
# 256 batch 5, 0.92-0.93 at 826 000-832 000; matmul wins from 1 315 840
# (width 256, 20 rows: sgemm 1.35×) up. Any threshold in that gap gives the
# least total time over the bench's 36 shapes.
LARGE_PRODUCT = 2**20


@functools.cache
def _thread_pools() -> ThreadpoolController:
    # Made once: finding the process's BLAS libraries scans every loaded
    # library, which costs more than a whole default run.
    return ThreadpoolController()


_limit_lock = threading.Lock()
_limit_holders = 0
_limit = None


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """A context in which numpy's BLAS runs on one thread, restored on exit.

    Its matrices here are small (at most 256 wide): a second thread only
    adds hand-offs, which on a busy machine cost more than they gain. The
    limit is process-wide, so it is counted: the first context to enter sets
    it and the last to leave restores it. Nested per context, one session's
    exit restored the default threads under another session still running,
    whose width-64 runs then differed from a lone run's in the last float32
    bits (tests/lib/test_robustness.py's concurrent runs, 1 in 3 tries).
    """
    global _limit_holders, _limit
    with _limit_lock:
        if _limit_holders == 0:
            _limit = _thread_pools().limit(limits=1, user_api="blas")
        _limit_holders += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_holders -= 1
            if _limit_holders == 0:
                _limit.restore_original_limits()
                _limit = None


def gemm_arguments(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple:
    """sgemm's arguments (A, B, C, trans_a, trans_b) that make
    `sgemm(alpha, A, B, beta, C, trans_a, trans_b, 1)` compute
    c = alpha * a @ b + beta * c in place, for 2-D float32 arrays a and b
    each contiguous in either order (a transposed view is passed as a
    transpose flag, not copied) and c C-contiguous.

    BLAS is column-major: a C-ordered array is the transpose of the same
    memory read column-major, so c = a @ b is computed as c.T = b.T @ a.T.
    """
    if not c.flags.c_contiguous:
        raise ValueError("c must be C-contiguous: sgemm writes it in place")
    A, trans_a = _column_major(b.T)
    B, trans_b = _column_major(a.T)
    return A, B, c.T, trans_a, trans_b


def _column_major(m: np.ndarray) -> tuple[np.ndarray, int]:
    """m as BLAS reads it: a Fortran-ordered array, and whether to transpose it."""
    if m.flags.f_contiguous:
        return m, 0
    if m.flags.c_contiguous:
        return m.T, 1
    raise ValueError("each factor must be contiguous in C or Fortran order")


def product(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> Callable[[], object]:
    """A call that computes c = a @ b in place, each time it is made, by
    whichever binding is faster for the product's size (see LARGE_PRODUCT);
    a, b and c as for gemm_arguments."""
    if a.shape[0] * a.shape[1] * b.shape[1] >= LARGE_PRODUCT:
        return functools.partial(np.matmul, a, b, out=c)
    A, B, C, trans_a, trans_b = gemm_arguments(a, b, c)
    return functools.partial(sgemm, 1.0, A, B, 0.0, C, trans_a, trans_b, 1)
