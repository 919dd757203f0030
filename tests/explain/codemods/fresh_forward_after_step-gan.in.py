fake = G(z)
score = D(fake)  # saved-here
loss_d = score.mean() - D(real).mean()
loss_d.backward(retain_graph=True)
opt_d.step()  # written-here
loss_g = -score.mean()
loss_g.backward()  # failed-here
