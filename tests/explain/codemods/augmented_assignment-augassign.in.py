y = torch.exp(x)  # saved-here
y += 1  # written-here
y.sum().backward()
