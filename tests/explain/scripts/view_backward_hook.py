"""pytorch/pytorch#61519: a full backward hook on a layer whose output an in-place ReLU then
writes (`nn.ReLU(inplace=True)` after it, as torchvision's densenet has)."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
mod = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True))


def hook_g(m, grad_input, grad_output):
    print(grad_input[0].shape)


mod[2].register_full_backward_hook(hook_g)  # hooked-here
out = mod(torch.rand((1, 3, 8, 8), generator=g))  # written-here
out.sum().backward()
