def d_loss(x):
    return bce(D(real), ones) + bce(D(x), zeros)


fake = netG(noise)  # saved-here
errD = d_loss(fake)  # written-here
errD.backward()
optimizerD.step()
netG.zero_grad()
errG = bce(D(fake), ones)  # failed-here
errG.backward()
