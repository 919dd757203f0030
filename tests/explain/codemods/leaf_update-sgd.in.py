for p in model.parameters():
    # a step by hand
    p -= lr * p.grad  # written-here
