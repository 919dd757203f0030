# refuses: is held by a container: rebinding it would leave the tensor others hold unwritten
state["h"] += 1  # written-here
