"""torch's CPU thread count for fitlab, set once when fitlab first imports torch.

fitlab serves several sessions on a few cores, and its matrices are tiny
(at most 256 × 256). torch's default of one intra-op thread per core makes
every request's threads spin against every other request's for no gain:
measured on the 2-core server under load, one thread per run trained 9 times
faster than two. Parallelism comes from sessions (one thread each), not from
inside a run.
"""

import torch

TORCH_THREADS = 1

torch.set_num_threads(TORCH_THREADS)
