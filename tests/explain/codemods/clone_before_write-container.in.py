maps = [torch.softmax(s, -1), torch.softmax(t, -1)]  # saved-here
maps[0] += maps[1]
