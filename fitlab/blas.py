"""numpy's BLAS thread count while fitlab computes (torch's is in fitlab.threads)."""

import functools

from threadpoolctl import ThreadpoolController


@functools.cache
def _thread_pools() -> ThreadpoolController:
    # Made once: finding the process's BLAS libraries scans every loaded
    # library, which cost more than a whole default run when done per call.
    return ThreadpoolController()


def one_blas_thread():
    """A context in which numpy's BLAS runs on one thread, restored on exit.

    Its matrices here are small (at most 256 wide): a second thread only
    adds hand-offs, and on a busy 2-core machine made a width-256 run
    several times slower and a weight matching ten times slower. The limit
    is process-wide while it lasts.
    """
    return _thread_pools().limit(limits=1, user_api="blas")
