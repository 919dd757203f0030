for x in batches:
    out, h = rnn(x, h)  # saved-here
    out.sum().backward(retain_graph=True)
    opt.step()
