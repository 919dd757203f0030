# The saving and the writing call on one line: the result is new, its out-of-place form binds the same.
y = torch.exp(x).add(1)  # saved-here written-here
