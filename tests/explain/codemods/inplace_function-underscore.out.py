h = torch.relu(h)  # written-here
