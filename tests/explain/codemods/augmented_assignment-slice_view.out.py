# A slice is a view: whether its name may be rebound is aliases.py's judgement, not an alias refusal.
x = h[:, :4]
x = x + 1  # written-here
