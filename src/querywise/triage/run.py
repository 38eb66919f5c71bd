"""Running the triage: locate each gold passage, probe the index, run the detectors, classify.

All query texts (original questions, literal and generated probes) and the gold chunks' texts
are embedded in one batch, then searched with precomputed vectors: 60 failures cost one model
call, not 240.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from querywise.corpus import Chunk
from querywise.index.engine import Mode
from querywise.index.store import Hit, Index
from querywise.triage.buckets import Case, Evidence, LiteralNeighbour, classify
from querywise.triage.detectors import (
    check_boundary,
    check_noise,
    check_query,
    check_vector,
    term_overlap,
)
from querywise.triage.failures import Failure, QueryDefectKind
from querywise.triage.locate import ChunkTable, doc_of, locate
from querywise.triage.probes import WriteProbe, generated_probe, idf_from, literal_probe

__all__ = ["triage_cases"]

Advance = Callable[[int], None]


def _rank(hits: Sequence[Hit], cid: str | None) -> int | None:
    return next((h.rank for h in hits if h.id == cid), None)


def triage_cases(
    failures: Sequence[Failure],
    ix: Index,
    *,
    table: ChunkTable | None = None,
    sources: Mapping[str, str] | None = None,
    labels: Mapping[str, QueryDefectKind] | None = None,
    k: int = 50,
    mode: Mode = "hybrid",
    write_probe: WriteProbe | None = None,
    progress: Callable[[str, int | None], Advance] | None = None,
) -> list[Case]:
    """Triage each failure against index `ix`; one `Case` per failure, in order.

    `table` is the index's chunks (read from `ix` when not given; pass it to reuse it across
    runs); `write_probe` writes the generated probe (passage text -> question), e.g. an LLM.
    """
    step = progress or (lambda phase, total: lambda n: None)
    table = table or ChunkTable.of(ix.chunks())
    labels = labels or {}
    lex = ix.lexicon
    idf = idf_from(lex.terms, lex.df, lex.n_docs)

    def bm25(text: str) -> list[Chunk]:
        return [table.chunks[h.id] for h in ix.search(text, mode="bm25", k=3) if h.id in table.chunks]

    advance = step("locating gold passages", len(failures))
    located = []
    for f in failures:
        located.append(locate(f, table, sources=sources, bm25=bm25))
        advance(1)

    # Evidence that needs no search, and the texts to embed in one batch.
    evidence: list[Evidence] = []
    texts: list[str] = []
    for f, loc in zip(failures, located, strict=True):
        ev = Evidence(location=loc, label=labels.get(f.id))
        if not loc.absent and loc.chunk_id is not None:
            gold = table.chunks[loc.chunk_id]
            gen = generated_probe(gold.text, idf, write_probe)
            ev = ev.model_copy(update={
                "literal_probe": literal_probe(gold.text), "generated_probe": gen.text, "generated_by": gen.by,
                "vocabulary_violations": gen.violations, "probe_error": gen.error, "noise": check_noise(gold.text),
                "boundary": check_boundary(
                    f.question, gold.search_text,
                    [(n, table.chunks[n].search_text) for n in table.neighbours(gold.id)], crosses=loc.crosses,
                ),
                "query": check_query(f.question, f.history, gold.search_text),
                "retrieved_rank": (f.retrieved.index(gold.id) + 1 if f.retrieved and gold.id in f.retrieved else None),
            })
            texts += [f.question, ev.literal_probe, ev.generated_probe, gold.search_text]
        evidence.append(ev)

    vectors = np.zeros((0, 0), dtype=np.float32)  # no gold located: nothing is embedded or probed
    if texts:
        step("embedding probes", None)
        vectors = np.asarray(ix.embedder.embed(texts), dtype=np.float32)

    advance = step("probing the index", len(failures))
    cases: list[Case] = []
    row = 0
    for f, ev in zip(failures, evidence, strict=True):
        gid = ev.location.chunk_id
        if not ev.location.absent and gid is not None:
            ranks: list[int | None] = []
            literal_hits: list[Hit] = []
            for j, text in enumerate((f.question, ev.literal_probe, ev.generated_probe)):
                hits = ix.query(
                    mode=mode, k=k,
                    dense=vectors[row + j].tolist() if mode != "bm25" else None,
                    sparse=lex.query_vector(text) if mode != "dense" else None,
                )
                ranks.append(_rank(hits, gid))
                if j == 1:
                    literal_hits = hits
            gold_text = table.chunks[gid].text
            stop = ranks[1] - 1 if ranks[1] is not None else 3
            gold_doc = ev.location.doc_id
            above = [LiteralNeighbour(id=h.id, rank=h.rank, overlap=round(term_overlap(gold_text, h.text), 4),
                                      same_doc=h.id in table.chunks and doc_of(table.chunks[h.id]) == gold_doc)
                     for h in literal_hits[: min(stop, 3)]]
            ev = ev.model_copy(update={
                "rank_original": ranks[0], "literal_rank": ranks[1], "generated_rank": ranks[2],
                "above_literal": above, "vector": check_vector(vectors[row + 3]),
            })
            row += 4
        bucket, reason, source = classify(ev, k=k)
        cases.append(Case(id=f.id, question=f.question, bucket=bucket,
                          evidence=ev.model_copy(update={"reason": reason, "label_source": source})))
        advance(1)
    return cases
