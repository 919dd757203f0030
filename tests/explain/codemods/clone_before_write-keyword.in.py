# name: hidden_states
out = layer(hidden_states=hidden_states, mask=mask)  # saved-here
