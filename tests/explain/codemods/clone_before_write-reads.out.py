# name: h
y = h.clone() @ w  # saved-here
