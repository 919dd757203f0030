maps = [torch.softmax(s, -1).clone(), torch.softmax(t, -1).clone()]  # saved-here
maps[0] += maps[1]
