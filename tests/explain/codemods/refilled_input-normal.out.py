z = torch.randn_like(z)  # written-here
