for p in model.parameters():
    # a step by hand
    with torch.no_grad():
        p -= lr * p.grad  # written-here
