h_state = None
for x in batches:
    r_out, h_state = rnn(x, h_state)  # saved-here
    out(r_out).sum().backward()
