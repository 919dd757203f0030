for x in batches:
    hidden = tuple(s.detach() for s in hidden)
    out, hidden = self.lstm(x, hidden)  # saved-here
