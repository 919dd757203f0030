"""Numerical plumbing the engines, the student and the blog's replay share: direct BLAS calls, torch's thread count."""
