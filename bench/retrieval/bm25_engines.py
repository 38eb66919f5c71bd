"""Three ways to do BM25, compared on quality (SciFact) and speed (SciFact size and 100k chunks).

(a) bm25s, method="lucene", English stop words, PyStemmer english
(b) bm25s, method="robertson" (same analysis)
(c) tantivy, the "en_stem" tokenizer (Lucene-like BM25, k1=1.2, b=0.75, no stop words)
(d) the library: `Index.search(mode="bm25")` (Lucene-form sparse vectors, IDF inside Qdrant)

plus the library's dense and hybrid (RRF inside the engine) modes on SciFact, and a plain
client-side RRF of bm25s + the library's dense list as a reference.

SciFact (BEIR): 5,183 abstracts, 300 test queries, qrels/test.tsv; doc text = title + text
(the library indexes `title\\ntext`, which tokenises the same). Documents and queries are
embedded once with the real model and cached in bench/work/.

    python -m bench.retrieval.bm25_engines [--synth-size 100000]
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import WORK, datasets, dir_size_mib, log, percentiles
from bench.measures import evaluate, latency, metric_self_check, ranx_check
from bench.report import write_json

# --------------------------------------------------------------------------- the engines


class Bm25s:
    def __init__(self, ids: list[str], texts: list[str], method: str) -> None:
        import bm25s
        import Stemmer

        self.name = f"bm25s-{method}"
        self._bm25s, self._stem = bm25s, Stemmer.Stemmer("english")
        t = time.perf_counter()
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stem, show_progress=False)
        self.r = bm25s.BM25(method=method)
        self.r.index(tokens, show_progress=False)
        self.build_s = time.perf_counter() - t
        self.ids = ids

    def search(self, q: str, k: int) -> list[str]:
        qt = self._bm25s.tokenize([q], stopwords="en", stemmer=self._stem, return_ids=False, show_progress=False)
        if not qt[0]:
            return []
        docs, scores = self.r.retrieve(qt, k=min(k, len(self.ids)), show_progress=False, n_threads=0)
        return [self.ids[d] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class Tantivy:
    def __init__(self, ids: list[str], texts: list[str], path: Path | None = None) -> None:
        import tantivy

        self.name = "tantivy-en_stem"
        t = time.perf_counter()
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem", index_option="freq")
        schema = sb.build()
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
        self.index = tantivy.Index(schema, path=str(path) if path else None)
        w = self.index.writer(heap_size=256_000_000, num_threads=1)
        for i, text in zip(ids, texts, strict=True):
            w.add_document(tantivy.Document(id=i, body=text))
        w.commit()
        w.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.build_s = time.perf_counter() - t
        self.path = path

    def search(self, q: str, k: int) -> list[str]:
        query, _errors = self.index.parse_query_lenient(q, ["body"])
        hits = self.searcher.search(query, k).hits
        return [self.searcher.doc(addr)["id"][0] for _score, addr in hits]


class Library:
    def __init__(self, index: Any, build_s: float | None) -> None:
        self.name = "querywise-bm25"
        self.index, self.build_s = index, build_s

    def search(self, q: str, k: int) -> list[str]:
        return [h.id for h in self.index.search(q, mode="bm25", k=k)]


def run_all(engine: Any, queries: dict[str, str], k: int) -> dict[str, list[str]]:
    return {qid: engine.search(q, k) for qid, q in queries.items()}


def overlap_at_10(a: dict[str, list[str]], b: dict[str, list[str]]) -> float:
    vals = [len(set(a[q][:10]) & set(b[q][:10])) / max(1, min(10, len(b[q]))) for q in a if b.get(q)]
    return round(float(np.mean(vals)), 4)


# --------------------------------------------------------------------------- library index on SciFact


def scifact_library_index(docs: list[tuple[str, str, str]]) -> tuple[Any, dict[str, Any]]:
    from bench.retrieval.synthetic_corpus import LookupEmbedder, embed_cached
    from querywise.corpus import Chunk
    from querywise.index import build_index

    chunks = [Chunk(id=i, title=t, text=x) for i, t, x in docs]
    texts = [c.search_text for c in chunks]
    vecs, meta = embed_cached(texts, "scifact-docs")
    emb = LookupEmbedder(texts, vecs, meta["model_id"])
    path = WORK / "indexes" / "scifact"
    shutil.rmtree(path, ignore_errors=True)
    t = time.perf_counter()
    index = build_index(chunks, path, embedder=emb)
    build_s = time.perf_counter() - t
    return index, {"build_s": round(build_s, 2), "doc_embedding": meta, "disk_mib": dir_size_mib(path)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--synth-size", type=int, default=100_000, help="size of the synthetic speed run (0: skip)")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--results-name", default="bm25_engines.json", help="file name in bench/results/")
    a = ap.parse_args()
    command = a.command or "python -m bench.retrieval.bm25_engines " + " ".join(sys.argv[1:])
    started = time.time()
    from bench.retrieval.synthetic_corpus import embed_cached
    from querywise.index.fusion import rrf

    docs, queries, qrels = datasets.scifact_test()
    ids = [d[0] for d in docs]
    texts = [f"{t} {x}".strip() for _, t, x in docs]
    log(f"SciFact: {len(docs)} docs, {len(queries)} test queries")
    result: dict[str, Any] = {"metric_check": metric_self_check(), "scifact": {"n_docs": len(docs), "n_queries": len(queries)}}

    engines: list[Any] = [Bm25s(ids, texts, "lucene"), Bm25s(ids, texts, "robertson"),
                          Tantivy(ids, texts, WORK / "tantivy-scifact")]
    index, lib_meta = scifact_library_index(docs)
    engines.append(Library(index, lib_meta["build_s"]))
    runs: dict[str, dict[str, list[str]]] = {}
    quality: dict[str, Any] = {}
    qtexts = list(queries.values())
    for e in engines:
        runs[e.name] = run_all(e, queries, 100)
        quality[e.name] = {**evaluate(runs[e.name], qrels),
                           "index_build_s": round(e.build_s, 3),
                           "latency_k10": latency(functools.partial(e.search, k=10), qtexts)}
        log(f"{e.name}: {quality[e.name]}")
    quality["querywise-bm25"]["index_build_s_note"] = (
        "full library build incl. dense HNSW (vectors precomputed), payload indexes and chunk store")
    quality["tantivy-en_stem"]["disk_mib"] = dir_size_mib(WORK / "tantivy-scifact")
    quality["querywise-bm25"]["disk_mib"] = lib_meta["disk_mib"]

    # the library's dense and hybrid modes, with real query embeddings
    qv, qmeta = embed_cached(qtexts, "scifact-queries")
    qids = list(queries)
    dense_run, hybrid_run = {}, {}
    for i, qid in enumerate(qids):
        dv = qv[i].tolist()
        sv = index.lexicon.query_vector(queries[qid])
        dense_run[qid] = [h.id for h in index.query(mode="dense", k=100, dense=dv)]
        hybrid_run[qid] = [h.id for h in index.query(mode="hybrid", k=100, dense=dv, sparse=sv)]
    client_rrf = {q: [d for d, _ in rrf([runs["bm25s-lucene"][q], dense_run[q]], k=60)][:100] for q in qids}

    def q_lat(mode: str) -> dict[str, float]:
        lat = []
        for i, qid in enumerate(qids):
            dv, sv = qv[i].tolist(), index.lexicon.query_vector(queries[qid])
            t = time.perf_counter()
            index.query(mode=mode, k=10, dense=dv, sparse=sv)
            lat.append(time.perf_counter() - t)
        return percentiles(lat)

    quality["querywise-dense"] = {**evaluate(dense_run, qrels), "latency_k10_precomputed_vector": q_lat("dense")}
    quality["querywise-hybrid"] = {**evaluate(hybrid_run, qrels), "latency_k10_precomputed_vector": q_lat("hybrid")}
    quality["client-rrf(bm25s-lucene,querywise-dense)"] = evaluate(client_rrf, qrels)
    result["scifact"]["quality"] = quality
    result["scifact"]["doc_embedding"] = lib_meta["doc_embedding"]
    result["scifact"]["query_embedding"] = qmeta
    result["scifact"]["agreement_overlap@10_vs_bm25s-lucene"] = {
        n: overlap_at_10(runs[n], runs["bm25s-lucene"]) for n in runs if n != "bm25s-lucene"}
    result["metric_check"]["ranx_cross_check_bm25s-lucene"] = ranx_check(runs["bm25s-lucene"], qrels)
    result["metric_check"]["ranx_cross_check_querywise-hybrid"] = ranx_check(hybrid_run, qrels)
    index.close()
    write_json(a.results_name, {**result, "wall_s": round(time.time() - started, 1)}, command)

    if a.synth_size:
        result["synthetic"] = synth_speed(a.synth_size)
    result["wall_s"] = round(time.time() - started, 1)
    result["notes"] = [
        "Latency = one query at a time, k=10, query analysis included for every engine; the library's "
        "result includes each chunk's payload (text), tantivy's fetches the stored id, bm25s returns row numbers.",
        "tantivy uses its fixed BM25 (k1=1.2, b=0.75) and no stop-word list; bm25s and the library k1=1.5, b=0.75.",
    ]
    path = write_json(a.results_name, result, command)
    log(f"wrote {path}")


def synth_speed(n: int) -> dict[str, Any]:
    """BM25 build and query speed of each way over n synthetic chunks (200 real queries)."""
    from bench.retrieval.synthetic_corpus import LIB_DEFAULT, index_path, query_texts, synth_chunks, synth_embedder
    from querywise.index import Index, build_index

    chunks, vecs = synth_chunks(n)
    ids = [c.id for c in chunks]
    texts = [c.text for c in chunks]
    qtexts = query_texts()
    out: dict[str, Any] = {"n": n, "n_queries": len(qtexts)}
    existing = sorted((WORK / "indexes").glob(f"synth-{n}-m*"))
    if existing:
        index = Index.open(existing[0])
        lib_build = None
        out["library_index"] = f"reused {existing[0].name} from bench.retrieval.scale (its build time is in scale.json)"
    else:
        m, efc, _ = LIB_DEFAULT
        path = index_path(n, m, efc)
        t = time.perf_counter()
        index = build_index(chunks, path, embedder=synth_embedder(chunks, vecs))
        lib_build = time.perf_counter() - t
        out["library_index"] = f"built {path.name} (library defaults)"
    engines: list[Any] = []
    for method in ("lucene", "robertson"):
        engines.append(Bm25s(ids, texts, method))
        log(f"bm25s-{method} indexed {n} in {engines[-1].build_s:.1f}s")
    tdir = Path(tempfile.mkdtemp(prefix="tantivy-", dir=WORK))
    engines.append(Tantivy(ids, texts, tdir))
    log(f"tantivy indexed {n} in {engines[-1].build_s:.1f}s")
    engines.append(Library(index, lib_build))
    qdict = {str(i): q for i, q in enumerate(qtexts)}
    speed: dict[str, Any] = {}
    runs = {}
    for e in engines:
        speed[e.name] = {"index_build_s": None if e.build_s is None else round(e.build_s, 2),
                         "latency_k10": latency(functools.partial(e.search, k=10), qtexts)}
        runs[e.name] = run_all(e, qdict, 10)
        log(f"{n} {e.name}: {speed[e.name]}")
    speed["tantivy-en_stem"]["disk_mib"] = dir_size_mib(tdir)
    shutil.rmtree(tdir, ignore_errors=True)
    out["speed"] = speed
    out["agreement_overlap@10_vs_bm25s-lucene"] = {
        k: overlap_at_10(runs[k], runs["bm25s-lucene"]) for k in runs if k != "bm25s-lucene"}
    index.close()
    return out


if __name__ == "__main__":
    main()
