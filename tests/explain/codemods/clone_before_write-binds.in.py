h = torch.sigmoid(x)  # saved-here
halve(h)
