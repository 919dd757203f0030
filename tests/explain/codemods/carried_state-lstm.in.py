for x in batches:
    out, hidden = self.lstm(x, hidden)  # saved-here
