"""The blog's own script, as written: the reference fitlab is held to."""
