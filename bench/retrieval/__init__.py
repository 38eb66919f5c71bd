"""Retrieval benchmarks: index build and search at scale, BM25 engines, fusion, reranking, embedding speed,
the evaluation harness on public data, and the peer libraries on the same tasks."""
