"""pytorch/examples#779: word_language_model's hand-written SGD step `p.add_(-lr, p.grad)` over the
model's parameters, run with grad mode on."""

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
model = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(12, 10))
criterion = nn.CrossEntropyLoss()
lr = 20.0
data = torch.randint(0, 10, (5, 3), generator=g)
targets = torch.randint(0, 10, (5,), generator=g)

for batch in range(2):
    model.zero_grad()
    loss = criterion(model(data), targets)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)  # written-here
