"""Tools run by hand: the bench and the budget's refit (python -m tools.NAME)."""
