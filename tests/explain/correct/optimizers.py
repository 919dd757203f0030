"""Every optimizer implementation torch offers on CPU: for-loop, foreach and fused."""

import torch
from torch import nn

results = []
for name, kwargs in [("SGD", {"momentum": 0.9}), ("Adam", {}), ("AdamW", {}), ("Adagrad", {})]:
    for impl in ("loop", "foreach", "fused"):
        g = torch.Generator().manual_seed(0)
        net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))
        with torch.no_grad():
            for p in net.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
        flag = {} if impl == "loop" else {impl: True}
        x, y = torch.randn(32, 6, generator=g), torch.randn(32, 1, generator=g)
        try:
            opt = getattr(torch.optim, name)(net.parameters(), lr=0.05, **kwargs, **flag)
            for _ in range(5):
                loss = ((net(x) - y) ** 2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        # An implementation this torch lacks: refused when built, or (fused on CPU before 2.4) at its step.
        except (RuntimeError, TypeError, ValueError) as exc:
            results.append(f"{name} {impl} unsupported {type(exc).__name__}")
            continue
        results.append(f"{name} {impl} {loss.item().hex()}")
print("\n".join(results))
