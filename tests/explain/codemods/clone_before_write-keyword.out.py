# name: hidden_states
out = layer(hidden_states=hidden_states.clone(), mask=mask)  # saved-here
