h_state = None
for x in batches:
    h_state = None if h_state is None else h_state.detach()
    r_out, h_state = rnn(x, h_state)  # saved-here
    out(r_out).sum().backward()
