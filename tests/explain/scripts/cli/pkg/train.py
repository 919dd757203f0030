"""`python -m pkg.train ARGS`: a relative import, then the in-place error."""

import sys

import torch

from .helper import SCALE

print("argv", sys.argv[1:], "name", __name__, flush=True)
x = torch.randn(4, requires_grad=True)
y = torch.exp(x * SCALE)  # saved-here
y += 1  # written-here
y.sum().backward()  # failed-here
