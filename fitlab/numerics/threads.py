"""torch's CPU thread count for fitlab: one per run.

fitlab serves several sessions on a few cores, and its matrices are tiny
(at most 256 × 256). torch's default of one intra-op thread per core makes
every request's threads spin against every other request's for no gain
(docs/robustness.md has the figures). Parallelism comes from sessions (one
thread each), not from inside a run.

The count is per OS thread (OpenMP and MKL keep it thread-locally), and
Streamlit runs each session's script in a thread of its own, so setting it
once at import only covers the importing thread: fitlab.blog.setup, where
every torch job starts (both engines' runs, the fix gallery's variants, the
replay, the vivid example, the tied-gradient ledger), sets it for the thread
it runs in. That also makes a run's numbers independent of which thread ran
it: without it, runs in a fresh thread differed from the same runs in the
main thread in the last float32 bits. And it is most of their cost: when
only train() set it, the fix gallery in the page's thread took 5.6–7.8 s
(AppTest, load 3.9) where the same variants took 1.7 s in the main thread;
in a fresh thread its variants took 14.7–20.5 s against 2.7–2.8 s once the
thread's count was set, the vivid example 0.19–0.60 s against 0.02 s
(width 64), on the shared 2-core machine at load 4.1, 2026-12-01.
"""

import torch

TORCH_THREADS = 1


def use_torch_threads() -> None:
    """Give the calling thread TORCH_THREADS intra-op threads."""
    torch.set_num_threads(TORCH_THREADS)


use_torch_threads()

