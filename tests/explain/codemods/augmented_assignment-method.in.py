e = torch.exp(x)
e.exp_()  # written-here
