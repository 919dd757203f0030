h = F.relu(F.linear(x, w))  # written-here
