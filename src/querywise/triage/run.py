"""Running the triage: locate each gold passage, probe the index, run the detectors, classify.

The probes go to the system that failed: the querywise index, or the user's own retriever
(`retriever`, any `querywise.retrieve.Retriever`) with the chunk table read from the user's
corpus file (their passages, with the ids their retriever returns). Then the vocabulary the
detectors need comes from that table, and the gold is located in it by a BM25 of its own.

The original questions are embedded in one batch and searched first (a document gold is
pointed at its chunk that ranks best for the question); then the literal and generated probes
and the gold chunks' texts in a second batch, searched with precomputed vectors: 60 failures
cost two model calls, not 240.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from querywise.conversation import texts as turn_texts
from querywise.corpus import Chunk
from querywise.embed import Embedder
from querywise.failures import FailureRow
from querywise.index.analysis import Analysis, analyse
from querywise.index.engine import Mode
from querywise.index.store import Hit
from querywise.retrieve import checked
from querywise.service import QueryWise
from querywise.text import analyze
from querywise.triage.buckets import (
    AboveGold,
    Evidence,
    GoldRank,
    LiteralNeighbour,
    RoutingCheck,
    TriageCase,
    classify,
)
from querywise.triage.checks import file_context_k, index_problems, rule_problems
from querywise.triage.detectors import (
    LabelCheck,
    check_boundary,
    check_label,
    check_noise,
    check_query,
    check_vector,
    label_words,
    nearest_pair,
    shared_terms,
    term_overlap,
)
from querywise.triage.failures import EvalFile, QueryDefectKind, sample_failures
from querywise.triage.golds import best_rank, gold_set, representative, with_ranks
from querywise.triage.locate import ChunkTable, Location, locate
from querywise.triage.options import TriageOptions
from querywise.triage.prices import repair_prices
from querywise.triage.probes import generated_probe, idf_from, literal_probe
from querywise.triage.report import TriageReport, build_report, population_of
from querywise.triage.target import TriageTarget

__all__ = ["ABOVE_KEPT", "probe_cases", "resolve_options", "triage", "with_table"]

Advance = Callable[[int], None]
#: `progress(phase, total)` returns `advance(n)` (the CLI's bar, a service job's counters).
Progress = Callable[[str, int | None], Advance]

#: How many of the chunks ranked above the gold (for the original question) a case keeps.
ABOVE_KEPT = 5
SNIPPET_CHARS = 160


def _rank(hits: Sequence[Hit], ids: set[str]) -> int | None:
    return next((h.rank for h in hits if h.id in ids), None)


def _gold_ids(loc: Location) -> set[str]:
    """The chunks of the representative gold: every chunk of a document gold, else the gold chunk."""
    return set(loc.chunk_ids) if loc.method == "document" else {str(loc.chunk_id)}


def routing_check(f: FailureRow) -> RoutingCheck | None:
    """What the plan did, when the row says (`searched`, `route`, `expected_route`); None when it
    says nothing about the plan."""
    if f.searched is None and f.route is None:
        return None
    if f.searched is not None and not f.searched:
        return RoutingCheck(
            flagged=True,
            route=f.route,
            expected_route=f.expected_route,
            searched_nothing=True,
            reason=f"the plan searched nothing (route {f.route or 'unknown'}" + (f", the case expects {f.expected_route}" if f.expected_route else "") + ")",
        )
    if f.expected_route and f.route and f.route != f.expected_route:
        return RoutingCheck(flagged=True, route=f.route, expected_route=f.expected_route, reason=f"routed to {f.route}, the case expects {f.expected_route}")
    return RoutingCheck(flagged=False, route=f.route, expected_route=f.expected_route, reason="searched on the expected route")


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rstrip() + "…"


def _table_bm25(table: ChunkTable, analysis: Analysis, ids: Sequence[str]) -> Callable[[str], list[Chunk]]:
    """The 3 best chunks of the table for a text, by BM25 over the table itself (to locate a gold
    passage when the index is the user's)."""
    lex = analysis.lexicon
    postings: dict[int, list[tuple[int, float]]] = {}
    for row, (tids, weights) in enumerate(analysis.vectors(0, len(analysis), k1=1.5, b=0.75)):
        for tid, w in zip(tids, weights, strict=True):
            postings.setdefault(tid, []).append((row, w))
    idf = idf_from(lex.terms, lex.df, lex.n_docs)

    def search(text: str) -> list[Chunk]:
        scores: dict[int, float] = {}
        for term in set(analyze(text)):
            if (tid := lex.terms.get(term)) is not None:
                for row, w in postings.get(tid, ()):
                    scores[row] = scores.get(row, 0.0) + idf(term) * w
        best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        return [table.chunks[ids[row]] for row, _ in best]

    return search


def triage(
    failures: EvalFile | Sequence[FailureRow],
    deployment: QueryWise | TriageTarget,
    options: TriageOptions | None = None,
    *,
    sources: Mapping[str, str] | None = None,
    labels: Mapping[str, QueryDefectKind] | None = None,
    progress: Progress | None = None,
) -> TriageReport:
    """Sort the failing rows of `failures` into the places where each is repaired: sample them
    (`options.sample`), probe the system that failed (a deployment, or a `TriageTarget`: an index,
    or a retriever with its passages), classify each, and count, share and price the buckets.

    Rows marked acceptable count for the population figures only. `sources`: the documents before
    ingest, by id; `labels`: people's query-defect labels, by case id; `progress(phase, total)`
    returns `advance(n)`.

    >>> report = triage(load_failures("failures.jsonl"), deployment, TriageOptions(sample=60))  # doctest: +SKIP
    """
    started = time.perf_counter()
    options = options or TriageOptions()
    read = failures if isinstance(failures, EvalFile) else EvalFile.of(failures)
    population = population_of(read.n_rows, read.n_acceptable, len(read.failures), eval_total=options.eval_total, acceptable=options.acceptable)
    if not read.failures:
        raise ValueError("no failing rows (acceptable: false) to triage")
    picked = sample_failures(read.failures, options.sample, options.seed)
    target = with_table(deployment if isinstance(deployment, TriageTarget) else TriageTarget.of(deployment))
    assert target.table is not None
    options, warnings = resolve_options(options, target, read.failures)
    warnings += index_problems(picked, target.table)
    cases = probe_cases(picked, target, options, sources=sources, labels=labels, progress=progress)
    report = build_report(cases, population, options, warnings=warnings)
    prices = repair_prices(deployment, [c.question for c in cases if c.bucket == "ranking"] or [picked[0].question]) if isinstance(deployment, QueryWise) else {}
    return report.model_copy(update={"seconds": round(time.perf_counter() - started, 3), "prices": prices})


def with_table(target: TriageTarget) -> TriageTarget:
    """`target` with its chunk table read (from its index, once) when it has none."""
    if target.table is not None:
        return target
    if target.index is None:
        raise ValueError("triage through a retriever needs the table of its passages (--corpus FILE)")
    return dataclasses.replace(target, table=ChunkTable.of(target.index.chunks()))


def resolve_options(options: TriageOptions, target: TriageTarget, failures: Sequence[FailureRow]) -> tuple[TriageOptions, list[str]]:
    """The depths chosen by the rule of `triage.options` for this corpus, deployment and failures
    file, and warnings where the file's rule and the options disagree."""
    table = with_table(target).table
    assert table is not None
    stated, warnings = file_context_k(failures)
    resolved = options.resolve(n_chunks=len(table.chunks), file_context_k=stated, rerank_top_n=target.rerank_top_n)
    return resolved, warnings + rule_problems(failures, resolved.depths[1])


def probe_cases(
    failures: Sequence[FailureRow],
    target: TriageTarget,
    options: TriageOptions,
    *,
    sources: Mapping[str, str] | None = None,
    labels: Mapping[str, QueryDefectKind] | None = None,
    progress: Progress | None = None,
) -> list[TriageCase]:
    """Each failure probed against `target` and classified: one `TriageCase` per failure, in order
    (the step of `triage` before the report; the benchmarks time it alone)."""
    ix, retriever, embedder, table, write_probe = target.index, target.retriever, target.embedder, target.table, target.write_probe
    step = progress or (lambda phase, total: lambda n: None)
    labels = labels or {}
    if ix is None and retriever is None:
        raise ValueError("triage needs an index or a retriever to probe")
    if table is None:
        if ix is None:
            raise ValueError("triage through a retriever needs the table of its passages (--corpus FILE)")
        table = ChunkTable.of(ix.chunks())
    if not options.resolved:  # called alone (the benchmarks): the depths by the rule, for this target
        options, _ = resolve_options(options, dataclasses.replace(target, table=table), failures)
    (k, context_k), mode = options.depths, options.mode
    embed = embedder if embedder is not None else ix.embedder if ix is not None else None
    if embed is None:
        raise ValueError("triage through a retriever needs an embedder for the vector checks")
    index = ix
    if index is not None:
        lex = index.lexicon
    else:  # the user's passages: the vocabulary and the locating BM25 come from the table itself
        ids = list(table.chunks)
        analysis = analyse([table.chunks[i].search_text for i in ids])
        lex = analysis.lexicon
        table_bm25 = _table_bm25(table, analysis, ids)
    idf = idf_from(lex.terms, lex.df, lex.n_docs)

    def bm25(text: str) -> list[Chunk]:
        if index is None:
            return table_bm25(text)
        return [table.chunks[h.id] for h in index.search(text, mode="bm25", k=3) if h.id in table.chunks]

    def search(vector: np.ndarray, text: str, how: Mode) -> list[Hit]:
        if retriever is not None:  # the system that failed answers the probes
            return checked(retriever, text, k=k, where=None, mode=how).hits
        assert index is not None
        return index.query(mode=how, k=k, dense=vector.tolist() if how != "bm25" else None,
                           sparse=lex.query_vector(text) if how != "dense" else None)

    advance = step("locating gold passages", len(failures))
    located: list[Location] = []
    golds: list[list[GoldRank]] = []
    for f in failures:
        primary = locate(f, table, sources=sources, bm25=bm25)
        located.append(primary)
        golds.append(gold_set(f, primary, table))
        advance(1)

    # The original questions with a relevant document in the index: one batch, one search each.
    asked = [i for i, gs in enumerate(golds) if any(g.chunk_ids for g in gs)]
    q_vectors = np.zeros((0, 0), dtype=np.float32)  # no gold located: nothing is embedded or probed
    question_hits: dict[int, list[Hit]] = {}
    q_row: dict[int, int] = {}
    if asked:
        step("embedding questions", None)
        q_vectors = np.asarray(embed.embed([failures[i].question for i in asked]), dtype=np.float32)
        advance = step("searching the questions", len(asked))
        for row, i in enumerate(asked):
            q_row[i] = row
            question_hits[i] = search(q_vectors[row], failures[i].question, mode)
            golds[i] = with_ranks(golds[i], question_hits[i], failures[i].retrieved)
            located[i] = representative(located[i], golds[i], table, [h.id for h in question_hits[i]])
            advance(1)

    # Evidence that needs no probe search, and the texts to embed in one batch.
    evidence: list[Evidence] = []
    texts: list[str] = []
    for i, (f, loc) in enumerate(zip(failures, located, strict=True)):
        ev = Evidence(location=loc, golds=golds[i], routing=routing_check(f), label=labels.get(f.id))
        if i in question_hits:
            gold = table.chunks[str(loc.chunk_id)]
            gen = generated_probe(gold.text, idf, write_probe)
            hits = question_hits[i]
            rank = best_rank(golds[i])
            above = hits[: rank - 1 if rank is not None else len(hits)][:ABOVE_KEPT]
            noise_of = functools.partial(_noisy, table=table, vocabulary=lex.word_counts, question=f.question)
            noise = check_noise(gold.text, clean=f.gold_text if loc.whitespace_only else None, vocabulary=lex.word_counts, searched=gold.search_text)
            boundary = check_boundary(f.question, gold.search_text, [(n, table.chunks[n].search_text) for n in table.neighbours(gold.id)], crosses=loc.crosses)
            mine = {"noisy": noise.flagged, "names_missing": boundary.flagged}
            ev = ev.model_copy(
                update={
                    "literal_probe": literal_probe(gold.text),
                    "generated_probe": gen.text,
                    "generated_by": gen.by,
                    "vocabulary_violations": gen.violations,
                    "probe_error": gen.error,
                    "noise": noise,
                    "boundary": boundary,
                    "query": check_query(f.question, turn_texts(f.history), gold.search_text),
                    "rank_original": rank,
                    "above_original": [
                        AboveGold(id=h.id, rank=h.rank, snippet=_snippet(h.text), same_doc=h.id in table.chunks and table.chunks[h.id].doc_id == loc.doc_id)
                        for h in above
                    ],
                    "retrieved_rank": best_rank(golds[i], retrieved=True),
                    "golds": [g.model_copy(update=mine if loc.chunk_id in g.chunk_ids else noise_of(g)) for g in golds[i]],
                }
            )
            texts += [ev.literal_probe, ev.generated_probe, gold.search_text]
        evidence.append(ev)

    vectors = np.zeros((0, 0), dtype=np.float32)
    if texts:
        step("embedding probes", None)
        vectors = np.asarray(embed.embed(texts), dtype=np.float32)

    advance = step("probing the index", len(failures))
    cases: list[TriageCase] = []
    row = 0
    for i, (f, ev) in enumerate(zip(failures, evidence, strict=True)):
        loc = ev.location
        if i in question_hits:
            gid = str(loc.chunk_id)
            literal_hits = search(vectors[row], ev.literal_probe, mode)
            generated_hits = search(vectors[row + 1], ev.generated_probe, mode) if ev.generated_probe else []  # none built: not searched
            literal_rank, generated_rank = _rank(literal_hits, {gid}), _rank(generated_hits, {gid})
            gold_text = table.chunks[gid].text
            stop = literal_rank - 1 if literal_rank is not None else 3
            above_literal = [
                LiteralNeighbour(id=h.id, rank=h.rank, overlap=round(term_overlap(gold_text, h.text), 4),
                                 same_doc=h.id in table.chunks and table.chunks[h.id].doc_id == loc.doc_id)
                for h in literal_hits[: min(stop, 3)]]
            ev = ev.model_copy(update={
                "literal_rank": literal_rank, "generated_rank": generated_rank, "above_literal": above_literal,
                "vector": check_vector(vectors[row + 2]),
                "label_check": _label_check(f, ev, table, q_vectors[q_row[i]], search, mode=mode, k=k,
                                            probe_ranks=(literal_rank, generated_rank), embed=embed),
            })
            row += 3
        bucket, reason, source = classify(ev, k=k, context_k=context_k)
        cases.append(TriageCase(id=f.id, question=f.question, bucket=bucket, history=f.history, gold_text=f.gold_text,
                          evidence=ev.model_copy(update={"reason": reason, "label_source": source})))
        advance(1)
    return cases


def _label_check(
    f: FailureRow, ev: Evidence, table: ChunkTable, q_vector: np.ndarray, search: Callable[[np.ndarray, str, Mode], list[Hit]],
    *, mode: Mode, k: int, probe_ranks: tuple[int | None, int | None], embed: Embedder | None = None,
) -> LabelCheck:
    """The suspect-label evidence: shared content terms with the gold (every chunk of a
    document gold), and, when none is shared and the question's search missed the gold, the
    question's rank in a dense and in a lexical search of its own; when it would be flagged, the
    closest pair of the question's and the gold's words by `embed` (a synonym clears it)."""
    gold_ids = _gold_ids(ev.location)
    gold_text = "\n".join(table.chunks[c].search_text for c in sorted(gold_ids, key=table.order.__getitem__))
    terms, shared = shared_terms(f.question, turn_texts(f.history), gold_text)
    searched = bool(terms) and not shared and ev.rank_original is None
    dense = lexical = None
    if searched:  # the run's own search missed it; the two that mode did not run may not
        dense = None if mode == "dense" else _rank(search(q_vector, f.question, "dense"), gold_ids)
        lexical = None if mode == "bm25" else _rank(search(q_vector, f.question, "bm25"), gold_ids)
    found = [r for r in probe_ranks if r is not None]
    synonym = None
    if searched and dense is None and lexical is None and found and embed is not None:  # it would be flagged: a synonym?
        q_words = label_words(" ".join([f.question, *turn_texts(f.history)]))
        g_words = label_words(gold_text)
        if q_words and g_words:
            synonym = nearest_pair(q_words, g_words, np.asarray(embed.embed(q_words + g_words), dtype=np.float32))
    return check_label(terms, shared, dense_rank=dense, lexical_rank=lexical, probe_rank=min(found) if found else None,
                       searched=searched, k=k, synonym=synonym)


def _noisy(g: GoldRank, *, table: ChunkTable, vocabulary: Mapping[str, int], question: str) -> dict[str, bool]:
    """Whether a relevant document (other than the representative, whose own checks are the
    evidence) has a mis-extracted first chunk, and whether its text lacks a name the question asks about."""
    if not g.chunk_ids:
        return {}
    chunks = [table.chunks[c] for c in g.chunk_ids]
    best = chunks[0]
    noisy = check_noise(best.text, vocabulary=vocabulary, searched=best.search_text).flagged
    missing = check_boundary(question, "\n".join(c.search_text for c in chunks), []).missing
    return {"noisy": noisy, "names_missing": bool(missing)}
