"""Installs its own sys.excepthook (as torch.distributed or rich do), then dies of the
in-place error, raised from another one."""

import sys
import traceback

import torch


def hook(kind, exc, tb):
    for line in "".join(traceback.format_exception(kind, exc, tb)).splitlines():
        print(f"[hooked] {line}", file=sys.stderr)


sys.excepthook = hook
x = torch.randn(4, requires_grad=True)
y = torch.exp(x)  # saved-here
y += 1  # written-here
try:
    y.sum().backward()  # failed-here
except RuntimeError as exc:
    raise RuntimeError(str(exc)) from exc
