# name: h
y = h @ w  # saved-here
