"""Service benchmarks: the HTTP server under load, hostile requests, injected faults, embedding batching
under concurrency."""
