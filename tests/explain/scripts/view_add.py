"""`x += x_conv` on a slice of a gated projection (a ConvNeXt/Mamba-style block): the slice is a
view, so the write reaches the tensor the mixing layer and the sigmoid saved for their backward."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 8)
        self.mix = nn.Linear(4, 4)

    def forward(self, feats):
        h = torch.sigmoid(self.proj(feats))
        x = h[:, :4]
        x_conv = self.mix(x)  # saved-here
        x += x_conv  # written-here
        return x


torch.manual_seed(0)
block = Block()
feats = torch.randn(5, 6, requires_grad=True)
block(feats).pow(2).sum().backward()  # failed-here
