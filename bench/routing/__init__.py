"""Routing benchmarks: the router and its calibration on CLINC150 (in-scope accuracy, out-of-scope recall)."""
