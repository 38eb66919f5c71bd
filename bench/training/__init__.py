"""Scripts that fit what the library ships (not benchmarks: the suite never runs them)."""
