"""torch's CPU thread count for fitlab: one per run.

fitlab serves several sessions on a few cores, and its matrices are tiny
(at most 256 × 256). torch's default of one intra-op thread per core makes
every request's threads spin against every other request's for no gain
(docs/robustness.md has the figures). Parallelism comes from sessions (one
thread each), not from inside a run.

The count is per OS thread (OpenMP and MKL keep it thread-locally), and
Streamlit runs each session's script in a thread of its own, so setting it
once at import only covers the importing thread: train() sets it for the
thread it runs in. That also makes a run's numbers independent of which
thread ran it: without it, runs in a fresh thread differed from the same runs
in the main thread in the last float32 bits.
"""

import torch

TORCH_THREADS = 1


def use_torch_threads() -> None:
    """Give the calling thread TORCH_THREADS intra-op threads."""
    torch.set_num_threads(TORCH_THREADS)


use_torch_threads()

