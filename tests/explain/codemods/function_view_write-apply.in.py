y = Passthrough.apply(x)  # saved-here
y.mul_(2)
