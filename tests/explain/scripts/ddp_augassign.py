"""`+=` on a sigmoid's output, in a DistributedDataParallel model's forward (one CPU process, gloo),
whose C++ threads also write tensors."""

import os
import tempfile

import torch
import torch.distributed as dist
from torch import nn

folder = tempfile.mkdtemp()
dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "store"), rank=0, world_size=1)
try:
    model = nn.parallel.DistributedDataParallel(nn.Linear(4, 4))
    out = torch.sigmoid(model(torch.randn(8, 4)))  # saved-here
    out += 1  # written-here
    out.sum().backward()  # failed-here
finally:
    dist.destroy_process_group()
