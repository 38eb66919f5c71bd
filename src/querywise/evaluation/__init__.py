"""Measuring whether each move earns its keep: routing, rewrites, retrieval."""
