def normalise(x):
    x /= x.norm(dim=-1, keepdim=True)  # saved-here written-here
