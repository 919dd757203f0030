"""A tiny randomly initialised BERT (a config, no download) trained three masked-LM steps:
its embeddings have padding_idx, written under no_grad at construction."""

import torch
from transformers import BertConfig, BertForMaskedLM

torch.manual_seed(0)  # transformers initialises from the global generator
config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=48, max_position_embeddings=32, pad_token_id=0)
model = BertForMaskedLM(config)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(1, 64, (4, 16))
ids[:, -3:] = 0
labels = ids.clone()
for _ in range(3):
    out = model(input_ids=ids, attention_mask=(ids != 0).long(), labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print("loss", out.loss.item().hex())
