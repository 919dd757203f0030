"""The in-place error raised in a logging thread of a ThreadPoolExecutor: the pool keeps the
exception and `result()` raises it again on the main thread, which dies of it."""

from concurrent.futures import ThreadPoolExecutor

import torch


def log_grad_norm(w):
    h = torch.sigmoid(w * 2)  # saved-here
    h.mul_(0.5)  # written-here
    h.sum().backward()  # failed-here
    return w.grad.norm().item()


w = torch.randn(4, generator=torch.Generator().manual_seed(0), requires_grad=True)
with ThreadPoolExecutor(1, thread_name_prefix="logger") as pool:
    print(pool.submit(log_grad_norm, w).result())
