"""A package run with -m."""
