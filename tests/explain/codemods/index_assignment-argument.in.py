# refuses: `x` is an argument of mask(): rebinding it would leave the caller's tensor unwritten
def mask(x):
    x[:, 0] = 0  # written-here
