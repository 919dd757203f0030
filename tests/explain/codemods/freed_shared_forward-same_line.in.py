# refuses: line 4 also feeds the second backward: a detach there would cut its gradient
fake = G(z)  # saved-here
for target in (zeros, ones):
    loss = bce(D(fake), target)  # written-here failed-here
    loss.backward()
