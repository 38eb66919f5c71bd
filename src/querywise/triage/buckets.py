"""Sorting one failure into exactly one bucket, by a fixed precedence.

The precedence follows where a failure is repaired, upstream first: a passage the index cannot
serve is fixed at ingest or in the chunker whatever the query was, so those buckets are decided
before anything about the query.

1. `absent` — the gold passage is in no chunk (filtered at ingest, never parsed, wrong id).
2. `extraction_noise` — the gold chunk's text is mis-extracted (ligature or broken-word soup,
   mostly non-words, repeated tokens, empty).
3. `degenerate_embedding` — its vector is near-constant; or, its text being clean, its own literal
   probe ranks it below chunks unrelated to it (other documents sharing under a quarter of its
   terms) and its generated probe does not bring it back at rank 1 either (a chunk that its own
   key-sentence question finds first has a working vector: the literal miss is the prefix's).
4. `chunk_boundary` — the gold crosses chunks, or the gold chunk lacks a product or identifier
   of the question that a neighbouring chunk of the same document carries.
5. `generation` — the gold was in the top 10 (of the system's `retrieved` list when given, else
   of the index for the original question): retrieval worked, the answer did not.
6. `ranking` — the gold ranks 11..k for the original question: a reranker or a larger k.
7. query defect — everything else, labelled `vocabulary` / `compound` / `referent` / `filler`
   from the human labels when given, else as the detectors suggest (marked "suggested"), else
   `unlabelled_query_defect`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from querywise.triage.detectors import (
    BoundaryCheck,
    NoiseCheck,
    QueryCheck,
    VectorCheck,
)
from querywise.triage.failures import QueryDefectKind
from querywise.triage.locate import Location

__all__ = [
    "BUCKETS",
    "QUERY_BUCKETS",
    "REPAIR",
    "UNREACHABLE_BUCKETS",
    "Bucket",
    "Case",
    "Evidence",
    "LiteralNeighbour",
    "classify",
]

Bucket = Literal[
    "absent", "extraction_noise", "degenerate_embedding", "chunk_boundary", "ranking", "generation",
    "vocabulary", "compound", "referent", "filler", "unlabelled_query_defect",
]
BUCKETS: tuple[Bucket, ...] = (
    "absent", "extraction_noise", "degenerate_embedding", "chunk_boundary", "ranking", "generation",
    "vocabulary", "compound", "referent", "filler", "unlabelled_query_defect",
)
UNREACHABLE_BUCKETS: tuple[Bucket, ...] = ("absent", "extraction_noise", "degenerate_embedding", "chunk_boundary")
QUERY_BUCKETS: tuple[Bucket, ...] = ("vocabulary", "compound", "referent", "filler", "unlabelled_query_defect")
REPAIR: dict[Bucket, str] = {
    "absent": "ingest (the document never reached the index)",
    "extraction_noise": "ingest (parsing and text extraction)",
    "degenerate_embedding": "ingest (embedding)",
    "chunk_boundary": "chunker",
    "ranking": "cross-encoder reranker over the top k, or a larger k",
    "generation": "generation",
    "vocabulary": "query layer (expansion, spelling, paraphrase)",
    "compound": "query layer (split into separate searches)",
    "referent": "query layer (standalone rewrite from the history)",
    "filler": "query layer (strip pleasantries)",
    "unlabelled_query_defect": "query layer (label it to know which move)",
}


class LiteralNeighbour(BaseModel):
    """A chunk ranked above the gold for the gold's literal probe: the share of the gold's terms
    it holds, and whether it comes from the gold's own document."""

    id: str
    rank: int
    overlap: float
    same_doc: bool = False


class Evidence(BaseModel):
    """Everything the classification looked at, kept with the case."""

    location: Location
    rank_original: int | None = None  # gold's rank in the index's top k for the raw question
    retrieved_rank: int | None = None  # gold's position in the system's own `retrieved` list
    literal_probe: str = ""
    literal_rank: int | None = None
    above_literal: list[LiteralNeighbour] = []
    generated_probe: str = ""
    generated_by: str = ""
    generated_rank: int | None = None
    vocabulary_violations: list[str] = []
    probe_error: str | None = None
    noise: NoiseCheck | None = None
    vector: VectorCheck | None = None
    boundary: BoundaryCheck | None = None
    query: QueryCheck | None = None
    label: QueryDefectKind | None = None  # the human label, when given
    label_source: Literal["human", "suggested"] | None = None
    reason: str = ""


class Case(BaseModel):
    """One triaged failure."""

    id: str
    question: str
    bucket: Bucket
    evidence: Evidence


#: A chunk above the gold that shares at least this share of the gold's terms (or comes from
#: the same document) is related to it, and no evidence against the gold's vector.
RELATED_OVERLAP = 0.25


def classify(ev: Evidence, *, k: int) -> tuple[Bucket, str, Literal["human", "suggested"] | None]:
    """The bucket of one failure, the reason in words, and where a query-defect label came from."""
    if ev.location.absent:
        return "absent", ev.location.detail or "gold passage not in the index", None
    if ev.noise is not None and ev.noise.flagged:
        return "extraction_noise", "; ".join(ev.noise.reasons), None
    if ev.vector is not None and ev.vector.flagged:
        return "degenerate_embedding", ev.vector.reason, None
    unrelated_above = bool(ev.above_literal) and all(
        n.overlap < RELATED_OVERLAP and not n.same_doc for n in ev.above_literal)
    if ev.literal_rank != 1 and ev.generated_rank != 1 and unrelated_above and not (ev.boundary and ev.boundary.flagged):
        where = f"rank {ev.literal_rank}" if ev.literal_rank else f"not in the top {k}"
        return "degenerate_embedding", (f"clean text, but its own literal probe puts it at {where} below unrelated chunks "
                                        f"(generated probe: {ev.generated_rank or 'not found'})"), None
    if ev.boundary is not None and ev.boundary.flagged:
        if ev.boundary.crosses:
            return "chunk_boundary", f"gold crosses chunks ({ev.location.detail})", None
        return "chunk_boundary", f"gold chunk lacks {', '.join(ev.boundary.missing)}, carried by {ev.boundary.carried_by}", None
    top10 = ev.retrieved_rank if ev.retrieved_rank is not None else ev.rank_original
    if top10 is not None and top10 <= 10:
        src = "the system's retrieved list" if ev.retrieved_rank is not None else "the index"
        return "generation", f"gold at rank {top10} in {src}: retrieval worked", None
    if ev.rank_original is not None and ev.rank_original <= k:
        return "ranking", f"gold at rank {ev.rank_original} of {k} for the original question", None
    if ev.label is not None:
        return ev.label, "human label", "human"
    if ev.query is not None and ev.query.suggested is not None:
        return ev.query.suggested, ev.query.cues[0], "suggested"
    return "unlabelled_query_defect", f"gold not in the top {k}; no detector fired and no label given", None
