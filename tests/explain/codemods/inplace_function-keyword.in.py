h = F.relu(F.linear(x, w), inplace=True)  # written-here
