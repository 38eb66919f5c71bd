"""What a triage probes: the system that failed.

The querywise index (its chunks are the table the gold is located in), or the user's own retriever
with the table of their passages (read from their corpus file, with the ids their retriever
returns) and an embedder for the vector checks; and, optionally, the writer of the generated probe
(an LLM). A served deployment (`QueryWise`) gives all of them (`TriageTarget.of`); `querywise
triage` builds them from the settings (`TriageTarget.of_settings`), with no understander.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.embed import Embedder, embedder_for
from querywise.index.store import Index
from querywise.retrieve import Retriever, open_retriever
from querywise.service import QueryWise
from querywise.triage.locate import ChunkTable
from querywise.triage.probe_writer import generate_probe, probe_writer_from
from querywise.triage.probes import WriteProbe

__all__ = ["TriageTarget"]


@dataclass(frozen=True)
class TriageTarget:
    """The index, or `retriever` with `table` (the user's passages) and `embedder`; `table` may be
    given with an index too, to read its chunks once across runs."""

    index: Index | None = None
    retriever: Retriever | None = None
    embedder: Embedder | None = None
    table: ChunkTable | None = None
    write_probe: WriteProbe | None = None  # passage text -> question (None: the deterministic probe)
    rerank_top_n: int | None = None  # the deployment's [rerank] candidate depth, when it reranks (the depth rule reads it)

    @classmethod
    def of(cls, deployment: QueryWise) -> TriageTarget:
        """A deployment's index, its retriever when that is not the index, and its LLM tier as the
        probe writer (within the deployment's LLM timeout)."""
        retriever = None if deployment.searches_own_index else deployment.retriever
        tier = deployment.understander.tier
        timeout = deployment.settings.llm.timeout_s
        write_probe = (lambda passage: generate_probe(tier.provider, passage, timeout_s=timeout)) if tier is not None else None
        return cls(index=deployment.index, retriever=retriever, write_probe=write_probe, rerank_top_n=_rerank_depth(deployment.settings))

    @classmethod
    def of_settings(cls, settings: Settings, index: Index | None, passages: Sequence[Chunk] | None = None) -> TriageTarget:
        """`index`, or the settings' `[retriever]` (the system that failed) with `passages` (the
        user's, with the ids their retriever returns) and the settings' embedder; the `[llm]`
        provider writes the generated probes. A `ValueError` names a retriever that cannot be opened."""
        embedder = None if index is not None else embedder_for(settings)
        retriever = open_retriever(settings.retriever, index, index.embedder if index is not None else embedder) if settings.retriever.kind != "index" else None
        return cls(
            index=index,
            retriever=retriever,
            embedder=embedder,
            table=ChunkTable.of(passages) if passages is not None else None,
            write_probe=probe_writer_from(settings),
            rerank_top_n=_rerank_depth(settings),
        )


def _rerank_depth(settings: Settings) -> int | None:
    """The candidates the deployment's reranker sees (`[rerank] top_n`), when it reranks."""
    return settings.rerank.top_n if settings.rerank.kind != "none" else None
