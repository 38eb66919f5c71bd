"""Failure-triage benchmarks: triage on SciFact and doc2dial failures, its speed, the first-contact path a
user runs (index, eval --failures, triage), and triage through a remote retriever."""
