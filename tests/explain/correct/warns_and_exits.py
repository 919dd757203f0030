"""A script that warns from an op, writes to both streams, and exits with its own status."""

import sys
import warnings

import torch

x = torch.arange(6.0).reshape(2, 3).requires_grad_()
warnings.warn("a warning of the script's own", stacklevel=1)
y = torch.nn.functional.softmax(x)  # torch's implicit-dim warning, raised by an op
y.sum().backward()
print("grad", x.grad.sum().item().hex())
print("to stderr", file=sys.stderr)
sys.exit(3)
