h = torch.sigmoid(x).clone()  # saved-here
halve(h)
