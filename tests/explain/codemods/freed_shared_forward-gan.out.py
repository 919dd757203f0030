for step in range(2):
    fake = G(torch.randn(16, 4))  # saved-here
    opt_D.zero_grad()
    errD = bce(D(real), ones) + bce(D(fake.detach()), zeros)  # written-here
    errD.backward()
    opt_D.step()
    opt_G.zero_grad()
    errG = bce(D(fake), ones)  # failed-here
    errG.backward()
    opt_G.step()
