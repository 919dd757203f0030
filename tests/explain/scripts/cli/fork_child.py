"""Forks; the child dies of the in-place error, the parent waits and finishes."""

import os

import torch

pid = os.fork()
if pid == 0:
    x = torch.randn(4, requires_grad=True)
    y = torch.exp(x)
    y += 1
    y.sum().backward()
_, status = os.waitpid(pid, 0) if pid else (0, 0)
if pid:
    print("child exit", os.waitstatus_to_exitcode(status))
