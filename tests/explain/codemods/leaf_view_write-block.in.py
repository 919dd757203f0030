# refuses: is not one simple statement
for i in range(4): w[i] = 0  # written-here
