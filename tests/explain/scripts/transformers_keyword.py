"""A script that imports transformers (a tiny random BERT, no download); a helper scales, in place,
the hidden states the encoder saved. The saved line passes them by keyword as HF code does
(`hidden_states=hidden_states`): --fix's copy at that line must clone the value, not the keyword
(`hidden_states.clone()=...` does not compile: once an exit 2, "expression cannot contain assignment")."""

import torch
from transformers import BertConfig, BertModel


def scale(states):
    states.mul_(2)  # written-here


torch.manual_seed(0)
config = BertConfig(vocab_size=32, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=16, max_position_embeddings=16)
model = BertModel(config)
ids = torch.randint(1, 32, (2, 6))
hidden_states = torch.tanh(model.embeddings(input_ids=ids))
out = model.encoder(hidden_states=hidden_states).last_hidden_state  # saved-here
scale(hidden_states)
out.pow(2).sum().backward()  # failed-here
