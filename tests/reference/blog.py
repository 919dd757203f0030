"""The blog's script, as it was written (global seed, DataLoader), for comparison.

Only the tests use it: it is the reference fitlab must match draw for draw.
"""

import torch
from torch import nn
from torch.utils import data


def blog_run(width=5, shared_repeats=2, lr=0.01, batch_size=5, epochs=100,
             n_samples=200, n_train=50, in_features=10, seed=0, detach=True):
    """Returns (teacher named_parameters before re-init, per-epoch train losses,
    the exception from backward() or None)."""
    torch.manual_seed(seed)

    def get_label(net, X):
        out = net(X)
        return (out.detach() if detach else out).reshape((-1, 1))

    def init_weight(m):
        if type(m) == nn.Linear:
            nn.init.kaiming_normal_(m.weight)
            nn.init.zeros_(m.bias)

    shared = nn.Linear(width, width)
    hidden = [m for _ in range(shared_repeats) for m in (shared, nn.ReLU())]
    net = nn.Sequential(nn.Linear(in_features, width), nn.ReLU(), *hidden, nn.Linear(width, 1))
    teacher = [(name, p.detach().clone()) for name, p in net.named_parameters()]
    X = torch.randn((n_samples, in_features))
    labels = get_label(net, X)
    net.apply(init_weight)
    trainer = torch.optim.SGD(net.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    train_x, train_y = X[:n_train], labels[:n_train]
    data_iter = data.DataLoader(list(zip(train_x, train_y)), batch_size=batch_size)
    losses = []
    try:
        for _ in range(epochs):
            for xb, yb in data_iter:
                trainer.zero_grad()
                loss = loss_fn(net(xb), yb)
                loss.backward()
                trainer.step()
            losses.append(torch.mean(loss_fn(net(train_x), train_y)).item())
    except RuntimeError as exc:
        return teacher, losses, exc
    return teacher, losses, None
