"""Hunter-DDM/knowledge-neurons#14: editing a knowledge neuron subtracts an embedding from one column
of a layer's weight, `dense.weight[:, pos] -= ...`, with grad mode on."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
model = nn.Sequential(nn.Linear(6, 4), nn.GELU(), nn.Linear(4, 6))
ori_pred_emb = torch.randn(6, generator=g)
pos = 2
model[2].weight[:, pos] -= ori_pred_emb * 0.5  # written-here
print(model(torch.randn(1, 6, generator=g)))
