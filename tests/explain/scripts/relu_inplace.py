"""nn.ReLU(inplace=True) right after a sigmoid, whose backward needs its own output."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)
        self.act = nn.ReLU(inplace=True)
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))  # saved-here
        h = self.act(h)  # written-here
        return self.out(h)


torch.manual_seed(0)
net = Net()
x = torch.randn(32, 8)
loss = net(x).pow(2).mean()
loss.backward()  # failed-here
