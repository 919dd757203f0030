layer = nn.Linear(4, 4)
with torch.no_grad():
    layer.weight[:, 0] = 0  # written-here
