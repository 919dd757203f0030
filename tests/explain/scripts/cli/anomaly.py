"""Dies of the in-place error under anomaly mode, which prints the forward call's trace (through
nn.Module's frames) before the traceback."""

import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)
net = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
y = net(torch.randn(3, 4))  # saved-here
y += 1  # written-here
y.sum().backward()  # failed-here
