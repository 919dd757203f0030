def block(x):
    h = torch.exp(x)
    h += x  # written-here
    return h
