y = Passthrough.apply(x).clone()  # saved-here
y.mul_(2)
