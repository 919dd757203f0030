for x in batches:
    h = h.detach()
    out, h = rnn(x, h)  # saved-here
    out.sum().backward(retain_graph=True)
    opt.step()
