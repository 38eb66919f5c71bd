"""Sorting one failure into exactly one bucket, by a fixed precedence.

The precedence follows where a failure is repaired, upstream first: a passage the index cannot
serve is fixed at ingest or in the chunker whatever the query was, so those buckets are decided
before anything about the query.

The gold is the set of judged relevant documents (`Evidence.golds`): `absent` when none of them is
in the index; noise and boundary when the best-ranked one is damaged and no other relevant one
in the index is clean (else that one would answer); a case's rank is its best-ranked relevant
document, which decides generation and ranking. The probes and the vector check read the
representative gold (`Evidence.location`): the relevant document ranked best for the question,
else the primary gold of the row.

1. `absent` — the gold passage is in no chunk (filtered at ingest, never parsed, wrong id).
2. `extraction_noise` — the gold chunk's text is mis-extracted (ligature or broken-word soup,
   words run together or split by the extractor, mostly non-words, repeated tokens, empty). Run
   together or split: the locator matched the gold text only ignoring whitespace and 2+ of the
   chunk's words there are no words of the gold ("warrantycovers"); or, against the index
   vocabulary, 2+ words (and 5%+ of the tokens) are unknown to every other chunk and split into
   two words other chunks have ("damageif"), or join a neighbour into one ("war ranty").
3. `degenerate_embedding` — its vector is near-constant; or, its text being clean, its own literal
   probe ranks it below chunks unrelated to it (other documents sharing under a quarter of its
   terms) and its generated probe does not bring it back at rank 1 either (a chunk that its own
   key-sentence question finds first has a working vector: the literal miss is the prefix's).
4. `chunk_boundary` — the gold crosses chunks, or the gold chunk lacks a product or identifier
   of the question that a neighbouring chunk of the same document carries.
5. `routing` — the plan searched nothing, or took another route than the case expects (the
   failures row's `searched` and `route` / `expected_route`): repaired in the router, whatever
   the index would have returned.
5b. `generation` — the gold was within the top N, N = `context_k` (`--context-k`, what the
   generator or UI is shown; default 10), of the system's `retrieved` list when given, else of
   the index for the original question: retrieval worked, the answer did not.
6. `ranking` — the gold ranks N+1..k (in `retrieved` when it is there, else for the original
   question in the index): a reranker or a larger k. When a query-side detector also fires
   (`evidence.query.suggested`), the reason says so and the report counts the ranking cases
   with a cue: an upper bound on what the query layer adds there.
7. `suspect_label` — the relevance label is suspect, repaired by re-judging it, not by the query
   layer. The rule, all three must hold:
   (a) the gold shares no content term with the question or its history: the project's
       analyzer (`querywise.text.analyze`: stop words out, stemmed) less the asking words
       (`detectors.ASK_WORDS`: "how", "can", "does", ...), i.e. `term_overlap(...,
       content_only=True) == 0` for the question and each earlier turn;
   (b) nothing about the question's own words finds it: its rank for the original question is
       outside the top k both in a dense and in a lexical (BM25) search, whatever `--mode` is
       (no shared term and no shared topic either);
   (c) the gold itself is retrievable: its own literal or generated probe ranks it within the
       top k (if neither does, the index is at fault, and the failure is not blamed on the label).
   The evidence is `evidence.label_check`. It comes before the query defects (a human
   query-defect label says which query move would help, not that the label is right).
8. query defect — everything else, labelled `vocabulary` / `compound` / `referent` / `filler`
   from the human labels when given, else as the detectors suggest (marked "suggested"), else
   `unlabelled_query_defect`.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel

from querywise.conversation import Turns
from querywise.triage.detectors import (
    BoundaryCheck,
    LabelCheck,
    NoiseCheck,
    QueryCheck,
    VectorCheck,
)
from querywise.triage.failures import QueryDefectKind
from querywise.triage.locate import Location
from querywise.triage.options import DEFAULT_CONTEXT_K

__all__ = [
    "BUCKETS",
    "LABEL_BUCKETS",
    "QUERY_BUCKETS",
    "REPAIR",
    "UNREACHABLE_BUCKETS",
    "AboveGold",
    "Bucket",
    "Evidence",
    "GoldRank",
    "LiteralNeighbour",
    "RoutingCheck",
    "TriageCase",
    "classify",
    "has_query_cue",
]

Bucket = Literal[
    "absent", "extraction_noise", "degenerate_embedding", "chunk_boundary", "routing", "ranking", "generation", "suspect_label",
    "vocabulary", "compound", "referent", "filler", "unlabelled_query_defect",
]
BUCKETS: tuple[Bucket, ...] = get_args(Bucket)  # in the order of precedence
UNREACHABLE_BUCKETS: tuple[Bucket, ...] = ("absent", "extraction_noise", "degenerate_embedding", "chunk_boundary")
LABEL_BUCKETS: tuple[Bucket, ...] = ("suspect_label",)
QUERY_BUCKETS: tuple[Bucket, ...] = ("vocabulary", "compound", "referent", "filler", "unlabelled_query_defect")
REPAIR: dict[Bucket, str] = {
    "absent": "ingest (the document never reached the index)",
    "extraction_noise": "ingest (parsing and text extraction)",
    "degenerate_embedding": "ingest (embedding)",
    "chunk_boundary": "chunker",
    "routing": "router (the plan searched nothing or took the wrong route)",
    "ranking": "cross-encoder reranker over the top k, or a larger k",
    "generation": "generation",
    "suspect_label": "relevance labels (re-judge: the gold shares no term or topic with the question)",
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


class AboveGold(BaseModel):
    """A chunk the index ranks above the gold for the original question (the gold's own
    document's chunks included, marked `same_doc`)."""

    id: str
    rank: int
    snippet: str  # the start of its text, whitespace collapsed
    same_doc: bool = False


class GoldRank(BaseModel):
    """One judged relevant document (or chunk) of the case: whether the index holds it, and where
    it ranks for the original question and in the system's own list."""

    id: str  # the judged id (a chunk or document id)
    chunk_ids: list[str] = []  # its chunks in the index ([]: not in the index)
    rank_original: int | None = None  # best rank of its chunks for the original question (None: not in the top k)
    retrieved_rank: int | None = None  # its first position in the system's `retrieved` list
    noisy: bool = False  # its (best) chunk's text is mis-extracted
    names_missing: bool = False  # its text lacks a name or identifier the question asks about


class RoutingCheck(BaseModel):
    """What the plan did with the question, as the failures row recorded it."""

    flagged: bool
    route: str | None = None
    expected_route: str | None = None
    searched_nothing: bool = False
    reason: str = ""


class Evidence(BaseModel):
    """Everything the classification looked at, kept with the case."""

    location: Location  # the representative gold (probed): the best-ranked relevant one, else the primary
    golds: list[GoldRank] = []  # every judged relevant document, in the row's order
    routing: RoutingCheck | None = None
    rank_original: int | None = None  # best rank of any relevant document in the index's top k for the raw question
    retrieved_rank: int | None = None  # best position of any relevant document in the system's own `retrieved` list
    above_original: list[AboveGold] = []  # the first chunks ranked above the gold for the original question
    literal_probe: str = ""
    literal_rank: int | None = None
    above_literal: list[LiteralNeighbour] = []
    generated_probe: str = ""
    generated_by: str = ""  # "llm", "deterministic", or "none" (no question could be built: `probe_error` says why)
    generated_rank: int | None = None
    vocabulary_violations: list[str] = []
    probe_error: str | None = None
    noise: NoiseCheck | None = None
    vector: VectorCheck | None = None
    boundary: BoundaryCheck | None = None
    query: QueryCheck | None = None
    label_check: LabelCheck | None = None
    label: QueryDefectKind | None = None  # the human label, when given
    label_source: Literal["human", "suggested"] | None = None
    reason: str = ""


class TriageCase(BaseModel):
    """One triaged failure."""

    id: str
    question: str
    bucket: Bucket
    evidence: Evidence
    history: Turns = ()  # the question's earlier turns, as the failures file gave them
    gold_text: str | None = None  # the gold passage's text when the failures file gave it (else the gold chunk is the gold)


#: A chunk above the gold that shares at least this share of the gold's terms (or comes from
#: the same document) is related to it, and no evidence against the gold's vector.
RELATED_OVERLAP = 0.25


def classify(
    ev: Evidence, *, k: int, context_k: int = DEFAULT_CONTEXT_K,
) -> tuple[Bucket, str, Literal["human", "suggested"] | None]:
    """The bucket of one failure, the reason in words, and where a query-defect label came from
    (`k` and `context_k` as a `TriageOptions` holds them: checked there)."""
    located = [g for g in ev.golds if g.chunk_ids]
    if ev.location.absent and not located:
        detail = ev.location.detail or "gold passage not in the index"
        return "absent", (f"none of the {len(ev.golds)} relevant documents is in the index ({detail})" if len(ev.golds) > 1 else detail), None
    others = [g for g in located if ev.location.chunk_id not in g.chunk_ids]  # the representative's own checks are below
    clean_other = [g.id for g in others if not g.noisy]
    if ev.noise is not None and ev.noise.flagged and not clean_other:
        return "extraction_noise", "; ".join(ev.noise.reasons), None
    if ev.vector is not None and ev.vector.flagged:
        return "degenerate_embedding", ev.vector.reason, None
    unrelated_above = bool(ev.above_literal) and all(
        n.overlap < RELATED_OVERLAP and not n.same_doc for n in ev.above_literal)
    if ev.literal_rank != 1 and ev.generated_rank != 1 and unrelated_above and not (ev.boundary and ev.boundary.flagged):
        where = f"rank {ev.literal_rank}" if ev.literal_rank else f"not in the top {k}"
        return (
            "degenerate_embedding",
            (f"clean text, but its own literal probe puts it at {where} below unrelated chunks (generated probe: {ev.generated_rank or 'not found'})"),
            None,
        )
    whole_other = [g.id for g in others if not g.names_missing]
    if ev.boundary is not None and ev.boundary.flagged and not whole_other:
        if ev.boundary.crosses:
            return "chunk_boundary", f"gold crosses chunks ({ev.location.detail})", None
        return "chunk_boundary", f"gold chunk lacks {', '.join(ev.boundary.missing)}, carried by {ev.boundary.carried_by}", None
    if ev.routing is not None and ev.routing.flagged:
        return "routing", ev.routing.reason, None
    in_retrieved = ev.retrieved_rank is not None
    rank = ev.retrieved_rank if in_retrieved else ev.rank_original
    src = "the system's retrieved list" if in_retrieved else "the index for the original question"
    which = _which(ev, in_retrieved)
    if rank is not None and rank <= context_k:
        return "generation", f"{which} at rank {rank} in {src}, within the top {context_k} the generator sees: retrieval worked", None
    cue = _cue(ev)
    if rank is not None and rank <= k:
        return "ranking", f"{which} at rank {rank} of {k} in {src}, below the top {context_k} the generator sees{cue}", None
    if in_retrieved and ev.rank_original is not None and ev.rank_original <= k:
        return (
            "ranking",
            (
                f"{which} at rank {ev.retrieved_rank} in the system's retrieved list, beyond the top {k} "
                f"(the index ranks it {ev.rank_original} for the original question){cue}"
            ),
            None,
        )
    if ev.label_check is not None and ev.label_check.flagged:
        kept = f" (human label {ev.label!r} kept in the evidence)" if ev.label is not None else ""
        return "suspect_label", ev.label_check.reason + kept, None
    if ev.label is not None:
        return ev.label, "human label", "human"
    if ev.query is not None and ev.query.suggested is not None:
        return ev.query.suggested, ev.query.cues[0], "suggested"
    return "unlabelled_query_defect", f"gold not in the top {k}; no detector fired and no label given", None


def _which(ev: Evidence, in_retrieved: bool) -> str:
    """ "gold", or which of several relevant documents is the best-ranked one."""
    if len(ev.golds) <= 1:
        return "gold"
    ranks = [g.retrieved_rank if in_retrieved else g.rank_original for g in ev.golds]
    best = min((r for r in ranks if r is not None), default=None)
    found = sum(r is not None for r in ranks)
    who = next((g.id for g, r in zip(ev.golds, ranks, strict=True) if r == best), "?")
    return f"best-ranked relevant document ({who}; {found} of {len(ev.golds)} relevant in the list)"


def _cue(ev: Evidence) -> str:
    """A query-side cue on a ranking case, said (ranking is decided before any query defect)."""
    if ev.query is None or ev.query.suggested is None:
        return ""
    return f"; query-side cue: {ev.query.cues[0]}"


def has_query_cue(case: TriageCase) -> bool:
    """Whether a query-side detector fired on the case (read on ranking cases by the report)."""
    return case.evidence.query is not None and case.evidence.query.suggested is not None
