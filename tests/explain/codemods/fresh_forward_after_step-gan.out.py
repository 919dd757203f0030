fake = G(z)
score = D(fake)  # saved-here
loss_d = score.mean() - D(real).mean()
loss_d.backward(retain_graph=True)
opt_d.step()  # written-here
# fitlab-explain --fix: a fresh forward after the write
score = D(fake)
loss_g = -score.mean()
loss_g.backward()  # failed-here
