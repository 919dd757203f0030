y = torch.exp(x)
y *= a + b  # written-here
