"""Reduced from openai/baselines#418: DummyVecEnv's step() writes each observation into one
numpy buffer it returns every time (no copy). The policy's input is torch.from_numpy of that
buffer, so the next step overwrites the batch the linear layer saved for its weight's gradient:
no version bump, no error, and backward computes the gradient of the next observations."""

import numpy as np
import torch
from torch import nn


class DummyVecEnv:
    def __init__(self, n: int, rng):
        self.rng = rng
        self.buf_obs = np.zeros((n, 4), dtype=np.float32)  # one buffer for every step

    def reset(self):
        self.buf_obs[:] = self.rng.standard_normal(self.buf_obs.shape)
        return self.buf_obs

    def step(self, actions):
        for e, a in enumerate(actions):
            self.buf_obs[e] = self.rng.standard_normal(4) + a  # the write: numpy, into the saved memory
        return self.buf_obs


torch.manual_seed(0)
env = DummyVecEnv(8, np.random.default_rng(0))
policy = nn.Linear(4, 2)
obs = torch.from_numpy(env.reset())
logits = policy(obs)  # saved-here
actions = torch.distributions.Categorical(logits=logits).sample()
next_obs = env.step(actions.numpy())
loss = -torch.log_softmax(logits, dim=1).gather(1, actions[:, None]).mean()
loss.backward()  # backward-here
print("weight grad", policy.weight.grad.norm().item().hex())
