"""The blog's script, as it was written (global seed, DataLoader), for comparison.

The tests and tools.bench use it: it is the reference fitlab must match draw for
draw, and, for the autograd engine, bit for bit (and the loop fitlab's speed is
measured against).
"""

from dataclasses import dataclass

import torch
from torch import nn
from torch.utils import data


@dataclass
class BlogScript:
    """What the blog's script produced.

    teacher      named_parameters before the re-init (clones)
    losses       the train loss after each epoch, as the blog's `draw_y`
    error        the exception from backward(), or None
    final        named_parameters after training (clones), or None on an error
    test_figure  what the blog's `print(f'测试损失{test(...)}')` shows, or None
    """

    teacher: list
    losses: list
    error: Exception | None
    final: list | None
    test_figure: float | None


def blog_script(width=5, shared_repeats=2, lr=0.01, batch_size=5, epochs=100,
                n_samples=200, n_train=50, in_features=10, seed=0, detach=True) -> BlogScript:
    """The blog's script with its constants as arguments."""
    torch.manual_seed(seed)

    def get_label(net, X):
        out = net(X)
        return (out.detach() if detach else out).reshape((-1, 1))

    def init_weight(m):
        if type(m) == nn.Linear:
            nn.init.kaiming_normal_(m.weight)
            nn.init.zeros_(m.bias)

    def test(net, Loss, test_data, test_label):
        # The blog's test(), line for line (its batch_size is the global one).
        loss_sum = torch.zeros_like(test_label)
        data_iter = data.DataLoader(list(zip(test_data, test_label)), batch_size=batch_size, shuffle=False)
        for X, y in data_iter:
            pre_y = net(X)
            loss = Loss(pre_y, y)
            loss_sum += loss
        return torch.sum(loss_sum) / len(loss_sum)

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
        return BlogScript(teacher, losses, exc, None, None)
    final = [(name, p.detach().clone()) for name, p in net.named_parameters()]
    figure = test(net, loss_fn, X[n_train:], labels[n_train:]).item()
    return BlogScript(teacher, losses, None, final, figure)


def blog_run(**settings):
    """(teacher named_parameters before re-init, per-epoch train losses, the
    exception from backward() or None) of blog_script(**settings)."""
    script = blog_script(**settings)
    return script.teacher, script.losses, script.error
