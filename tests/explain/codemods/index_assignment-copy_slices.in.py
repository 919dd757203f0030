buf = torch.zeros(2, 3)
buf[0] = w * 2
y = buf * w  # saved-here
buf[1] = 5.0  # written-here
