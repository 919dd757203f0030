"""The engines that train a run: torch autograd (the reference) and numpy by hand."""
