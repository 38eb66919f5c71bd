"""The moves as the pipeline runs them: one module a move, each a class with the `Move` protocol
(`understand.draft`), reading and returning a `Draft`. The work itself stays in the move's pure
functions (`understand.exact`, `understand.filters`, ...); these classes say when a move applies
and what its trace step reads. The order lives in `understand.pipeline.MOVES`.
"""
