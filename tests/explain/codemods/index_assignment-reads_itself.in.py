for t in range(1, 4):
    out[t] = torch.tanh(out[t - 1] @ w)  # written-here
