# refuses: no line feeds the first backward alone
fake = G(z)  # saved-here
err_g = d_step_then_g_loss(fake)  # failed-here
err_g.backward()
