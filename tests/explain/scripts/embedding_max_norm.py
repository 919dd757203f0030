"""nn.Embedding(max_norm=...) renormalises its weight in place after it was used (torch's docs' example)."""

import torch
from torch import nn

torch.manual_seed(0)
n, d, m = 3, 5, 7
embedding = nn.Embedding(n, d, max_norm=1.0)
W = torch.randn((m, d), requires_grad=True)
idx = torch.tensor([1, 2])
a = embedding.weight @ W.t()  # saved-here
b = embedding(idx) @ W.t()  # written-here
out = a.unsqueeze(0) + b.unsqueeze(1)
loss = out.sigmoid().prod()
loss.backward()  # failed-here
