"""An error raised in a worker process and handed back to the main one: argv[1] names the launcher
(a multiprocessing pool's start method, concurrent.futures, torch.multiprocessing), argv[2] the
error (the in-place error, a backward through a freed graph, or not autograd's)."""

import concurrent.futures
import multiprocessing
import sys

import torch
import torch.multiprocessing


def work(rank, kind):
    x = torch.randn(4, requires_grad=True)
    y = torch.exp(x)
    if kind == "inplace":
        y += 1
    elif kind == "freed":
        y.sum().backward()
    else:
        raise ValueError("not autograd's")
    y.sum().backward()  # failed-here


if __name__ == "__main__":
    launcher, kind = sys.argv[1], sys.argv[2]
    if launcher == "torch.multiprocessing":
        torch.multiprocessing.start_processes(work, (kind,), nprocs=1, start_method="fork")
    elif launcher == "concurrent.futures":
        with concurrent.futures.ProcessPoolExecutor(1, multiprocessing.get_context("fork")) as pool:
            pool.submit(work, 0, kind).result()
    else:
        with multiprocessing.get_context(launcher).Pool(1) as pool:
            pool.apply(work, (0, kind))
    print("not reached")
