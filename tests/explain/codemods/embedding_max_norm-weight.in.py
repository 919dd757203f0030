a = emb.weight @ w.t()  # saved-here
