y = torch.exp(x)
y = y * (a + b)  # written-here
