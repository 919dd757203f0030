"""The page's tabs, one module each."""
