"""The blog's script again (global seed, nn.Linear, DataLoader), with each
candidate fix switchable: the reference the fix gallery must match.

Only the tests use it.
"""

import copy

import torch
from torch import nn
from torch.utils import data


def blog_variant(labels="attached", copy_teacher=False, retain_graph=False, reinit_data=False, hooks=False,
                 width=5, shared_repeats=2, lr=0.01, batch_size=5, epochs=3,
                 n_samples=200, n_train=50, in_features=10, seed=0):
    """Run the blog's script written one way. `labels` is one of attached,
    detach, no_grad, clone, no_reshape; `hooks` makes them under identity
    saved-tensor hooks. Returns a dict: exception (or None),
    where (epoch, batch) it was raised, losses (per-epoch train MSE),
    first_grads (the student's gradients after the first backward, in
    parameter order) and teacher_grads (gradients on a separate teacher)."""
    torch.manual_seed(seed)
    shared = nn.Linear(width, width)
    hidden = [m for _ in range(shared_repeats) for m in (shared, nn.ReLU())]
    net = nn.Sequential(nn.Linear(in_features, width), nn.ReLU(), *hidden, nn.Linear(width, 1))
    X = torch.randn((n_samples, in_features))
    if hooks:
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = net(X).reshape((-1, 1))
    elif labels == "attached":
        y = net(X).reshape((-1, 1))
    elif labels == "detach":
        y = net(X).detach().reshape((-1, 1))
    elif labels == "no_grad":
        with torch.no_grad():
            y = net(X).reshape((-1, 1))
    elif labels == "clone":
        y = net(X).clone().reshape((-1, 1))
    else:
        y = net(X)
    student = copy.deepcopy(net) if copy_teacher else net

    def init_weight(m):
        if type(m) == nn.Linear:
            if reinit_data:
                nn.init.kaiming_normal_(m.weight.data)
                m.bias.data.zero_()
            else:
                nn.init.kaiming_normal_(m.weight)
                nn.init.zeros_(m.bias)

    student.apply(init_weight)
    trainer = torch.optim.SGD(student.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    data_iter = data.DataLoader(list(zip(X[:n_train], y[:n_train])), batch_size=batch_size)
    out = {"exception": None, "where": None, "losses": [], "first_grads": None}
    try:
        for epoch in range(1, epochs + 1):
            for batch, (xb, yb) in enumerate(data_iter, start=1):
                out["where"] = (epoch, batch)
                trainer.zero_grad()
                loss = loss_fn(student(xb), yb)
                loss.backward(retain_graph=retain_graph)
                if out["first_grads"] is None:
                    out["first_grads"] = [p.grad.clone() for p in student.parameters()]
                trainer.step()
            with torch.no_grad():
                out["losses"].append(loss_fn(student(X[:n_train]), y[:n_train]).item())
    except RuntimeError as exc:
        out["exception"] = exc
    out["teacher_grads"] = ([p.grad for p in net.parameters()] if copy_teacher else None)
    return out
