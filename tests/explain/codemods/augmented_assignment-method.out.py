e = torch.exp(x)
e = e.exp()  # written-here
