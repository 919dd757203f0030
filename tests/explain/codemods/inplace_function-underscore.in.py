torch.relu_(h)  # written-here
