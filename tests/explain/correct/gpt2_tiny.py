"""A tiny randomly initialised GPT-2 (a config, no download) trained three causal-LM steps."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)  # transformers initialises from the global generator
config = GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=2, n_positions=32)
model = GPT2LMHeadModel(config)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
ids = torch.randint(0, 64, (4, 16))
for _ in range(3):
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print("loss", out.loss.item().hex())
