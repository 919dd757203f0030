"""Ops that warn: the warnings must name these lines, as they do without fitlab."""

import torch
import torch.nn.functional as F

x = torch.randn(3, 3)
F.softmax(x)  # warned-here
torch.range(0, 2)  # warned-cpp-here
