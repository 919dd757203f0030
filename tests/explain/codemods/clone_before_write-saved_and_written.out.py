def normalise(x):
    x /= x.clone().norm(dim=-1, keepdim=True)  # saved-here written-here
