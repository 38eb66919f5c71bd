"""Query-understanding benchmarks: follow-ups (gate, rewrites, recall), several intents, the plan's latency
with and without an LLM, crafted inputs, access attacks and the someone-else's-account rule."""
