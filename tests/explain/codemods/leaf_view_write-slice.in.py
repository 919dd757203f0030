layer = nn.Linear(4, 4)
layer.weight[:, 0] = 0  # written-here
