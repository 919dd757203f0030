"""Serving the page's work on a shared server: caches, the fair job line, worker processes, budgets, the run log."""
