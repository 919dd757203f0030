# refuses: line 3 reads `fake` 2 times: the recording names the line that feeds the first backward, not which read does
fake = G(z)  # saved-here
errD = bce(D(fake), zeros) + penalty(D, real, fake)  # written-here
errD.backward()
errG = bce(D(fake), ones)  # failed-here
errG.backward()
