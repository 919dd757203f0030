"""The blog's bug: labels computed without detach, then the same net re-initialised in place."""

import torch
from torch import nn

torch.manual_seed(0)


def get_label(net, X):
    return net(X).reshape((-1, 1))  # saved-here


def init_weight(m):
    if type(m) == nn.Linear:
        nn.init.kaiming_normal_(m.weight)  # written-here
        nn.init.zeros_(m.bias)


shared = nn.Linear(5, 5)
net = nn.Sequential(nn.Linear(10, 5), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(5, 1))
X = torch.randn(200, 10)
labels = get_label(net, X)
net.apply(init_weight)
trainer = torch.optim.SGD(net.parameters(), lr=0.01)
loss_fn = nn.MSELoss()
for i in range(0, 50, 5):
    trainer.zero_grad()
    loss = loss_fn(net(X[i:i + 5]), labels[i:i + 5])
    loss.backward()  # failed-here
    trainer.step()
