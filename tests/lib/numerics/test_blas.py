"""fitlab.numerics.blas: sgemm called on numpy's C-ordered arrays computes what matmul does."""

import numpy as np
import pytest
from scipy.linalg.blas import sgemm
from threadpoolctl import threadpool_info, threadpool_limits

from fitlab.numerics.blas import LARGE_PRODUCT, gemm_arguments, one_blas_thread, product


def factors(rows, inner, cols, a_order, b_order):
    rng = np.random.default_rng(rows * 7 + inner * 3 + cols)
    a = rng.standard_normal((rows, inner), dtype=np.float32)
    b = rng.standard_normal((inner, cols), dtype=np.float32)
    # A Fortran-ordered factor is the transposed view of a C-ordered array,
    # as the fast engine passes its transposed blocks and buffers.
    if a_order == "F":
        a = np.ascontiguousarray(a.T).T
    if b_order == "F":
        b = np.ascontiguousarray(b.T).T
    return a, b


@pytest.mark.parametrize("a_order", ["C", "F"])
@pytest.mark.parametrize("b_order", ["C", "F"])
@pytest.mark.parametrize("rows,inner,cols", [(5, 11, 7), (1, 4, 3), (6, 1, 6), (3, 3, 3)])
def test_sgemm_adds_alpha_a_b_into_c_in_place(rows, inner, cols, a_order, b_order):
    a, b = factors(rows, inner, cols, a_order, b_order)
    c = np.random.default_rng(1).standard_normal((rows, cols), dtype=np.float32)
    expected = c - 0.5 * (a @ b)
    A, B, C, trans_a, trans_b = gemm_arguments(a, b, c)
    sgemm(-0.5, A, B, 1.0, C, trans_a, trans_b, 1)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_order", ["C", "F"])
@pytest.mark.parametrize("shape", [(5, 11, 7), (64, 128, 128)], ids=["small", "large"])
def test_product_writes_a_b_into_c_whichever_binding(shape, a_order):
    rows, inner, cols = shape
    assert (rows * inner * cols >= LARGE_PRODUCT) == (shape == (64, 128, 128))
    a, b = factors(rows, inner, cols, a_order, "C")
    c = np.full((rows, cols), np.nan, dtype=np.float32)   # beta is 0: old values are ignored
    product(a, b, c)()
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)


def test_c_must_be_written_in_place():
    a, b = factors(3, 4, 5, "C", "C")
    with pytest.raises(ValueError, match="C-contiguous"):
        gemm_arguments(a, b, np.empty((5, 3), dtype=np.float32).T)


def blas_threads():
    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_overlapping_one_thread_contexts_keep_one_thread_until_the_last_leaves():
    # Two sessions' runs overlap: the first to leave must not restore the
    # default threads under the second (as nested limits did).
    with threadpool_limits(2, user_api="blas"):  # a default that differs from one, on any machine
        first, second = one_blas_thread(), one_blas_thread()
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert blas_threads() == {1}
        second.__exit__(None, None, None)
        assert blas_threads() == {2}
