"""Installs a sys.excepthook that fails part way (a logging hook with a bug), then dies of the
in-place error: python prints the hook's output, its error, then the original traceback."""

import sys

import torch


def hook(kind, exc, tb):
    print(f"[hooked] {kind.__name__}", file=sys.stderr)
    return {}["handler"]  # hook-fails-here


sys.excepthook = hook
x = torch.randn(4, requires_grad=True)
y = torch.exp(x)  # saved-here
y += 1  # written-here
y.sum().backward()  # failed-here
