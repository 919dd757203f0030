a = emb.weight.clone() @ w.t()  # saved-here
