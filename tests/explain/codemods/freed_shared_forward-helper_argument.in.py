# refuses: the shared tensor was made in another function than line 6, which feeds the first backward
# (the recording's first use of `fake` is inside step(), where it is `x`, an argument; `fake` is made at module level)


def step(x):
    err_d = bce(D(x), zeros)  # written-here
    err_d.backward()
    opt_D.step()
    return bce(D(x), ones)  # failed-here


fake = G(z)
step(fake).backward()
