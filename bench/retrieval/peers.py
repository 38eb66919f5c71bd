"""The same tasks in the peers' idiomatic configurations (#19 item 1), with one embedding model.

    .venv/bin/python -m bench.retrieval.peers                                     # everything (estimate: ~40 min on 2 idle cores)
    .venv/bin/python -m bench.retrieval.peers --only haystack,querywise-hybrid   # some systems
    .venv/bin/python -m bench.retrieval.peers --limit-docs 100 --limit-queries 10 --limit 100 --no-ranx   # smoke run, written to /tmp
    .venv/bin/python -m bench.retrieval.peers --fine-tune --cross-encoder FOLDER  # + the fine-tuned router, + a reranked row

Peers: `pip install -c requirements.lock -r bench/requirements-peers.txt` (see that file: three
packages go in with --no-deps). Systems whose packages are missing are skipped with a message.

Each system runs alone in its own child process (`python -m bench.retrieval.peers --system NAME --out
FILE`), so its peak memory is its own: VmHWM of the child (bench.peak_rss_mib; getrusage's
ru_maxrss is recorded beside it, which on Linux can carry the parent's pre-exec high-water mark).
Every child imports `bench` and so querywise's light top-level package (~68 MiB) and loads the
same data, so that baseline is in every figure.

**SciFact hybrid retrieval** (BEIR test: 300 queries, 5,183 abstracts; text = title, newline,
abstract, as querywise indexes it). Every system retrieves 100 per list and returns 100 fused
(recall@100), fuses by RRF with constant 60, and embeds with the packaged all-MiniLM-L6-v2 from
its folder (`querywise.embed.model_dir()`, offline), the peers through sentence-transformers:
- haystack: InMemoryDocumentStore (defaults: BM25L k1=1.5 b=0.75 delta=0.5, dot product on the
  model's unit vectors) + InMemoryBM25Retriever + InMemoryEmbeddingRetriever(top_k=100) +
  DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=100; k=61 on 0-based ranks = 60 on
  1-based), SentenceTransformersDocumentEmbedder/TextEmbedder (Haystack 3 ships them in
  sentence-transformers-haystack); query side in a Pipeline.
- llamaindex: VectorStoreIndex (SimpleVectorStore) over one TextNode per abstract,
  HuggingFaceEmbedding; BM25Retriever.from_defaults (bm25s, English stop words, PyStemmer
  english); QueryFusionRetriever(mode="reciprocal_rerank", num_queries=1, similarity_top_k=100;
  k=60 on 0-based ranks, not settable) with a MockLLM, which num_queries=1 never calls.
- langchain: BM25Retriever.from_texts (rank_bm25 BM25Okapi; default preprocess_func str.split:
  whitespace only, NO lowercasing, punctuation stays on the word) + InMemoryVectorStore with
  HuggingFaceEmbeddings (langchain-huggingface), EnsembleRetriever (langchain-classic; equal
  weights, c=60 on 1-based ranks), top 100 of its fused list.
- langchain-lowercase: the same with preprocess_func = lowercase, then whitespace split.
- querywise-hybrid: `build_index` + `Index.search(mode="hybrid", k=100)` with the library's
  defaults: plain RRF (rrf_k=60, dense_weight=0.5, depth 100) inside Qdrant (embedded), its own
  BM25 analyser (lowercase, English stop words, Snowball stemming, identifier compounds), and its
  default embedder: ONNX Runtime fp32 export of the same model folder. Retrieval only: no
  query-understanding moves. Vector cache off, so the build embeds the whole corpus; the ONNX
  export itself is made once beforehand (`--export-onnx`, as querywise's cache keeps it across
  runs) and is in no system's time or memory, as the peers' safetensors need no export.
- querywise-tuned: the same, with `[index] fusion`/`dense_weight` chosen by
  `querywise.evaluation.tune` (what `querywise tune` runs) on SciFact's train qrels (809
  queries) only, then reported on test. The tuning time is reported apart (tune_s), not in build_s.
- querywise-sentences: querywise-tuned on an index built with `[index] sentence_vectors = true`
  (each abstract's title and sentences embedded too, a multivector scored by the best sentence, a
  third hybrid list); fusion, dense_weight and sentence_share chosen by the same tune on train.
- querywise-hybrid+rerank: only with `--cross-encoder FOLDER`: querywise's CrossEncoderReranker
  over the hybrid top 20 (`[rerank] top_n`). No cross-encoder is on this machine.
build_s = indexing the corpus, embedding included (model loading and one warm-up embedding
excluded for every system, reported as load_s, with the peak RSS after it).
Every library runs with its own default thread settings (torch / ONNX Runtime: all cores);
`--threads N` caps both in every system alike. Run it on an idle machine: with a second process
busy on one of the 2 cores, a single-query torch encode from the main thread took ~0.5 s instead
of ~15 ms in the smoke runs; each row records the 1-minute load average at its start and end. Latency: one query at a time, query embedding
included, over all queries after 5 warm-up ones. nDCG@10 and recall@100: bench.measures.evaluate
(the BEIR/ranx definitions) for every system, cross-checked with ranx in `metric_check`.

**CLINC150 routing** (data_full: train 15,000; val 3,000 + 100 oos; test 4,500 + 1,000 oos).
- semantic-router: IndexedRouter (LocalIndex, top_k=5, mean aggregation: defaults) over the 150
  intents' train utterances, LocalEncoder (its sentence-transformers local encoder) on the model
  folder; `fit()` on val + oos_val (oos labelled None, Platt: its own calibration), then
  `confidence_threshold = 0.5` as its README does. `semantic-router-valtuned`: the same fitted
  router with one global threshold chosen here on val for querywise's objective
  (0.5 x in-scope accuracy + 0.5 x OOS recall); thresholds are applied to the confidence of
  `router(message, threshold=0.0)`, the same comparison as its own `c >= bar`.
- querywise-frozen: bench.routing.clinc150's configuration that its chooser kept in the trained
  family (read from bench/results/router_clinc150.json) on the frozen encoder, thresholds by its
  `calibrate` at its operating point (answered >= 97%, <= 10% deferred). querywise-frozen-nodefer:
  the same classifier with a deferral budget of 0 (every message decided; the oos gate still
  chosen on val for the same objective). `--fine-tune`: querywise-finetuned[-nodefer] with
  router_clinc150's fine-tuned encoder (trained once, kept in bench/work).
No system sees test before it is reported. Latency: one message at a time, embedding included,
over the same 1,000 test messages (seeded) for every system.

**Follow-up move**: not compared (FOLLOWUP below): the only peer move needs an LLM.

Writes bench/results/peers.json and peers.md (smoke runs with a --limit* go to /tmp only).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import RESULTS, ROOT, WORK, datasets, log, peak_rss_mib, percentiles
from bench.report import _version, machine_info

COMMAND = ".venv/bin/python -m bench.retrieval.peers"
K = 100  # retrieved per list and returned: recall@100 needs 100
RRF_K = 60
WARM_QUERIES = 5
SMOKE_DIR = Path(tempfile.gettempdir()) / "querywise-peers-smoke"
FOLLOWUP = ("Left out: LangChain's create_history_aware_retriever rewrites a follow-up with an LLM, and no peer here has an "
            "LLM-free follow-up move to compare with querywise's deterministic one; querywise's is measured in "
            "bench/results/rewrite_cast2019.* and conversations.*.")


@dataclass(frozen=True)
class System:
    name: str
    task: str  # "scifact" or "clinc150"
    modules: tuple[str, ...]  # importable modules it needs (the skip check)
    dists: tuple[str, ...]  # distributions named in its "version"
    config: str


_LC = ("langchain_community", "langchain_classic", "langchain_huggingface", "rank_bm25")
_LC_DISTS = ("langchain-community", "langchain-classic", "langchain-core", "langchain-huggingface", "rank-bm25")
SYSTEMS = [
    System("haystack", "scifact", ("haystack", "haystack_integrations.components.embedders.sentence_transformers"),
           ("haystack-ai", "sentence-transformers-haystack"),
           "InMemoryDocumentStore (BM25L k1=1.5 b=0.75 delta=0.5; tokens: lowercase + NFC, regex [^\\W]+, no stemming, no stop words) "
           "+ InMemoryBM25Retriever + InMemoryEmbeddingRetriever (top_k=100, dot product) + DocumentJoiner(reciprocal_rank_fusion, top_k=100); "
           "SentenceTransformersDocumentEmbedder/TextEmbedder on the model folder (batch 32)"),
    System("llamaindex", "scifact", ("llama_index.core", "llama_index.retrievers.bm25", "llama_index.embeddings.huggingface"),
           ("llama-index-core", "llama-index-retrievers-bm25", "llama-index-embeddings-huggingface"),
           "VectorStoreIndex (SimpleVectorStore) + BM25Retriever.from_defaults (bm25s lucene k1=1.5 b=0.75; tokens: lowercase, \\w\\w+, "
           "English stop words, PyStemmer english) + QueryFusionRetriever(reciprocal_rerank, num_queries=1, similarity_top_k=100, MockLLM unused); "
           "HuggingFaceEmbedding on the model folder (batch 10)"),
    System("langchain", "scifact", _LC, _LC_DISTS,
           "BM25Retriever.from_texts (rank_bm25 BM25Okapi k1=1.5 b=0.75; tokens: str.split, no lowercasing) + InMemoryVectorStore "
           "+ EnsembleRetriever (equal weights, c=60), top 100; HuggingFaceEmbeddings on the model folder (batch 32)"),
    System("langchain-lowercase", "scifact", _LC, _LC_DISTS,
           "as langchain, with preprocess_func = text.lower().split()"),
    System("querywise-hybrid", "scifact", ("querywise",), ("querywise",),
           "build_index + Index.search(hybrid, k=100): plain RRF (rrf_k=60, dense_weight=0.5, depth 100) in Qdrant edge; "
           "its BM25 analyser (lowercase, English stop words, Snowball stemming, identifier compounds); "
           "its default embedder: ONNX Runtime fp32 of the same model folder (batch 64); no query moves"),
    System("querywise-tuned", "scifact", ("querywise",), ("querywise",),
           "as querywise-hybrid, with [index] fusion/dense_weight chosen by querywise.evaluation.tune on SciFact train qrels (809 queries)"),
    System("querywise-sentences", "scifact", ("querywise",), ("querywise",),
           "as querywise-tuned, built with [index] sentence_vectors (a best-sentence multivector per abstract, a third hybrid list); "
           "fusion/dense_weight/sentence_share chosen by querywise.evaluation.tune on SciFact train qrels"),
    System("querywise-hybrid+rerank", "scifact", ("querywise", "sentence_transformers"), ("querywise", "sentence-transformers"),
           "querywise-hybrid, then querywise's CrossEncoderReranker (--cross-encoder folder) over the top 20"),
    System("semantic-router", "clinc150", ("semantic_router",), ("semantic-router",),
           "IndexedRouter (LocalIndex, top_k=5, mean) over train utterances, LocalEncoder on the model folder; fit() on val+oos_val (Platt)"),
    System("querywise-router", "clinc150", ("querywise",), ("querywise",),
           "bench.routing.clinc150's kept trained configuration (fitted on train) on the frozen encoder (ONNX fp32)"),
    System("querywise-router-ft", "clinc150", ("querywise",), ("querywise",),
           "as querywise-router, on router_clinc150's fine-tuned encoder (one epoch on train)"),
]
BY_NAME = {s.name: s for s in SYSTEMS}


def missing_modules(system: System) -> list[str]:
    out = []
    for m in system.modules:
        try:
            if importlib.util.find_spec(m) is None:
                out.append(m)
        except ModuleNotFoundError:
            out.append(m)
    return out


def version(system: System) -> str:
    parts = [f"{d} {_version(d)}" for d in system.dists]
    if "querywise" in system.dists:
        parts[system.dists.index("querywise")] += f" (git {_git_revision()})"
    return ", ".join(parts)


def _git_revision() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+uncommitted" if git("status", "--porcelain", "--untracked-files=no") else "")


def model_folder() -> Path:
    from querywise.embed import model_dir

    return model_dir()


# --------------------------------------------------------------------------- SciFact

Search = Callable[[str], list[str]]


@dataclass
class Built:
    search: Search
    untimed_s: float = 0.0  # inside the build call but not building (querywise-tuned's tuning)
    notes: dict[str, Any] = field(default_factory=dict)


Builder = Callable[[Sequence[Any]], Built]  # chunks -> a searchable system


def scifact_data(split: str, limit_docs: int | None, limit_queries: int | None) -> tuple[list[Any], list[Any]]:
    """Chunks and judged cases of SciFact; limited: the first queries, their relevant abstracts and
    the first others up to `limit_docs`."""
    chunks, cases = datasets.scifact(split)
    cases = cases[:limit_queries] if limit_queries else cases
    if limit_docs:
        keep = {d for c in cases for d in c.relevant}
        for c in chunks:
            if len(keep) >= limit_docs:
                break
            keep.add(c.id)
        chunks = [c for c in chunks if c.id in keep]
    return chunks, cases


def haystack(_: argparse.Namespace) -> Builder:
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    from haystack import Document, Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_integrations.components.embedders.sentence_transformers import (  # Haystack 3: sentence-transformers-haystack
        SentenceTransformersDocumentEmbedder,
        SentenceTransformersTextEmbedder,
    )

    model = str(model_folder())
    doc_embedder = SentenceTransformersDocumentEmbedder(model=model, progress_bar=False)
    text_embedder = SentenceTransformersTextEmbedder(model=model, progress_bar=False)
    doc_embedder.warm_up()
    text_embedder.warm_up()
    doc_embedder.run([Document(content="warm-up")])

    def build(chunks: Sequence[Any]) -> Built:
        store = InMemoryDocumentStore()
        docs = doc_embedder.run([Document(id=c.id, content=c.search_text) for c in chunks])["documents"]
        store.write_documents(docs)
        pipe = Pipeline()
        pipe.add_component("text_embedder", text_embedder)
        pipe.add_component("embedding_retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=K))
        pipe.add_component("bm25_retriever", InMemoryBM25Retriever(document_store=store, top_k=K))
        pipe.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=K))
        pipe.connect("text_embedder.embedding", "embedding_retriever.query_embedding")
        pipe.connect("bm25_retriever", "joiner")
        pipe.connect("embedding_retriever", "joiner")

        def search(q: str) -> list[str]:
            out = pipe.run({"text_embedder": {"text": q}, "bm25_retriever": {"query": q}})
            return [d.id for d in out["joiner"]["documents"]]

        return Built(search)

    return build


def llamaindex(_: argparse.Namespace) -> Builder:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
    from llama_index.core.schema import TextNode
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    from llama_index.retrievers.bm25 import BM25Retriever

    embed = HuggingFaceEmbedding(model_name=str(model_folder()))
    embed.get_text_embedding("warm-up")

    def build(chunks: Sequence[Any]) -> Built:
        nodes = [TextNode(id_=c.id, text=c.search_text) for c in chunks]
        index = VectorStoreIndex(nodes, embed_model=embed, show_progress=False)
        bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K)
        fusion = QueryFusionRetriever([index.as_retriever(similarity_top_k=K), bm25], llm=MockLLM(), mode=FUSION_MODES.RECIPROCAL_RANK,
                                      similarity_top_k=K, num_queries=1)
        return Built(lambda q: [n.node.node_id for n in fusion.retrieve(q)])

    return build


def lower_split(text: str) -> list[str]:
    return text.lower().split()


def langchain(args: argparse.Namespace, *, lowercase: bool = False) -> Builder:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_huggingface import HuggingFaceEmbeddings

    embeddings = HuggingFaceEmbeddings(model_name=str(model_folder()))
    embeddings.embed_query("warm-up")

    def build(chunks: Sequence[Any]) -> Built:
        texts, metas = [c.search_text for c in chunks], [{"id": c.id} for c in chunks]
        bm25 = BM25Retriever.from_texts(texts, metadatas=metas, k=K, **({"preprocess_func": lower_split} if lowercase else {}))
        store = InMemoryVectorStore(embeddings)
        store.add_texts(texts, metadatas=metas, ids=[c.id for c in chunks])
        ensemble = EnsembleRetriever(retrievers=[bm25, store.as_retriever(search_kwargs={"k": K})], c=RRF_K)
        return Built(lambda q: [d.metadata["id"] for d in ensemble.invoke(q)][:K])

    return build


def querywise_builder(args: argparse.Namespace, *, tuned: bool = False, cross_encoder: Path | None = None, sentences: bool = False) -> Builder:
    from querywise.config import Settings
    from querywise.embed import OnnxEmbedder
    from querywise.index import Index, build_index

    # no vector cache: the build embeds every abstract (and with sentence vectors, every sentence)
    settings = Settings.model_validate({"embedding": {"cache": False}, "index": {"sentence_vectors": sentences}})
    if not any(onnx_dir(args).glob("*.onnx")):
        log(f"no ONNX export in {onnx_dir(args)}: exporting in this process (torch loaded: its peak memory counts here)")
    # What embedder_for(settings) makes (auto = ONNX fp32), with its export kept on disk as the default cache keeps it.
    embedder = OnnxEmbedder.fp32(export_dir=onnx_dir(args), batch_size=settings.embedding.batch_size, threads=args.threads)
    embedder.embed(["warm-up"])
    reranker = None
    if cross_encoder is not None:
        from querywise.retrieve import CrossEncoderReranker, rerank

        reranker = CrossEncoderReranker(cross_encoder)
        reranker.scores("warm-up", ["warm-up"])

    def build(chunks: Sequence[Any]) -> Built:
        path = args.work / f"{args.system}-index"
        shutil.rmtree(path, ignore_errors=True)
        index = build_index(list(chunks), path, settings=settings, embedder=embedder)
        if reranker is not None:
            top_n = settings.rerank.top_n
            return Built(lambda q: [h.id for h in rerank(reranker, q, index.search(q, mode="hybrid", k=K), top_n)[0]], notes={"top_n": top_n})
        if not tuned:
            return Built(lambda q: [h.id for h in index.search(q, mode="hybrid", k=K)])
        t0 = time.perf_counter()
        chosen, notes = tune_on_train(index, settings, args)
        index.close()
        from querywise.cli.tune import as_index_settings

        fusion = settings.index.model_copy(update=as_index_settings(chosen, sentences=sentences))
        tuned_index = Index.open(path, settings=settings.model_copy(update={"index": fusion}), embedder=embedder)
        notes["n_sentences"] = tuned_index.manifest.n_sentences
        return Built(lambda q: [h.id for h in tuned_index.search(q, mode="hybrid", k=K)], time.perf_counter() - t0, notes)

    return build


def onnx_dir(args: argparse.Namespace) -> Path:
    return Path(args.work) / "onnx-export"


def export_onnx(args: argparse.Namespace) -> None:
    """querywise's ONNX export of the model folder, made once before the querywise children (as its
    default cache keeps it across runs), so that no system's time or memory carries it."""
    from querywise.embed import export_fp32_onnx

    log(f"ONNX export: {export_fp32_onnx(onnx_dir(args))!s}")


def tune_on_train(index: Any, settings: Any, args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """`querywise tune`'s procedure on SciFact's train qrels (never test), as bench/retrieval/fusion.py runs it."""
    from querywise.evaluation.metrics import parse_metric
    from querywise.evaluation.tune import tune
    from querywise.service import QueryWise

    _, train = scifact_data("train", None, args.limit_queries)
    t0 = time.perf_counter()
    with QueryWise(settings, index) as qw:
        result = tune(train, qw, parse_metric("ndcg@10"))
    return result.chosen, {"tuned_on": f"SciFact train qrels, {result.n} queries", "chosen": result.chosen.label,
                           "train_cv_ndcg@10": result.cv_score, "tune_s": round(time.perf_counter() - t0, 2)}


SCIFACT_BUILDERS: dict[str, Callable[[argparse.Namespace], Builder]] = {
    "haystack": haystack,
    "llamaindex": llamaindex,
    "langchain": langchain,
    "langchain-lowercase": lambda a: langchain(a, lowercase=True),
    "querywise-hybrid": querywise_builder,
    "querywise-tuned": lambda a: querywise_builder(a, tuned=True),
    "querywise-sentences": lambda a: querywise_builder(a, tuned=True, sentences=True),
    "querywise-hybrid+rerank": lambda a: querywise_builder(a, cross_encoder=a.cross_encoder),
}


def memory() -> dict[str, float]:
    return {"peak_rss_mb": peak_rss_mib(), "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}


def run_scifact(args: argparse.Namespace) -> dict[str, Any]:
    from bench.measures import evaluate

    chunks, cases = scifact_data("test", args.limit_docs, args.limit_queries)
    t0 = time.perf_counter()
    builder = SCIFACT_BUILDERS[args.system](args)
    load_s, rss_loaded = time.perf_counter() - t0, peak_rss_mib()
    t0 = time.perf_counter()
    built = builder(chunks)
    build_s = time.perf_counter() - t0 - built.untimed_s
    for case in cases[:WARM_QUERIES]:
        built.search(case.message)
    run, seconds = {}, []
    for case in cases:
        t0 = time.perf_counter()
        run[case.id] = built.search(case.message)
        seconds.append(time.perf_counter() - t0)
    mem = memory()
    lat = percentiles(seconds)
    row = {**evaluate(run, {c.id: c.relevant for c in cases}), "build_s": round(build_s, 2), "latency_p50_ms": lat["p50_ms"],
           "latency_p95_ms": lat["p95_ms"], **mem, "peak_rss_after_load_mb": rss_loaded, "load_s": round(load_s, 2),
           "n_docs": len(chunks), "n_queries": len(cases), **built.notes}
    return {"rows": {args.system: row}, "run": run}


# --------------------------------------------------------------------------- CLINC150


def clinc_subset(path: Path, limit: int | None, folder: Path) -> Path:
    """The data file itself, or (limit) an evenly spaced subset of each split written to `folder`
    (outside the repository): `limit` messages per split, 3 x limit of train."""
    if not limit:
        return path
    raw = datasets.clinc150(path)

    def even(rows: list[Any], n: int) -> list[Any]:
        return rows[:: max(1, len(rows) // n)][:n]

    sub = {split: even(rows, 3 * limit if split == "train" else limit) for split, rows in raw.items()}
    out = folder / "clinc150-subset.json"
    out.write_text(json.dumps(sub), encoding="utf-8")
    return out


def split_texts(raw: dict[str, Any], *splits: str) -> tuple[list[str], np.ndarray]:
    rows = [r for s in splits for r in raw[s]]
    return [t for t, _ in rows], np.asarray([lab for _, lab in rows])


def latency_sample(raw: dict[str, Any], n: int) -> list[str]:
    texts, _ = split_texts(raw, "test", "oos_test")
    return [texts[i] for i in np.random.default_rng(0).permutation(len(texts))[:n]]


def per_message_ms(fn: Callable[[str], Any], texts: Sequence[str]) -> dict[str, float]:
    from bench.measures import latency

    return latency(fn, texts, warm=20)


def routing_row(kind: np.ndarray, label: np.ndarray, y: np.ndarray, signal: np.ndarray, lat: dict[str, float], **extra: Any) -> dict[str, Any]:
    from bench.routing.router import metrics

    m = metrics(kind, label, y, signal)
    keys = ("in_scope_accuracy", "answered_accuracy", "deferred_share", "oos_recall", "oos_precision")
    return {**{k: round(m[k], 4) for k in keys}, "latency_p50_ms": lat["p50_ms"], "latency_p95_ms": lat["p95_ms"],
            "n_in_scope": m["n_in_scope"], "n_oos": m["n_oos"], **extra}


def best_threshold(conf: np.ndarray, top: np.ndarray, y: np.ndarray) -> float:
    """One global confidence threshold on val for querywise's objective (1 - w) x in-scope accuracy
    + w x OOS recall (w = bench.routing.router.OOS_WEIGHT); ties to the lower threshold."""
    from bench.routing.router import OOS_WEIGHT

    ins = y != "oos"
    best, pick = -1.0, 0.0
    for t in np.unique(np.concatenate([[0.0], conf])):
        routed = conf >= t
        isa = float((routed & (top == y))[ins].mean())
        recall = float((~routed)[~ins].mean()) if (~ins).any() else 0.0
        objective = (1 - OOS_WEIGHT) * isa + OOS_WEIGHT * recall
        if objective > best:
            best, pick = objective, float(t)
    return pick


def run_semantic_router(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    from semantic_router import IndexedRouter, Route
    from semantic_router.encoders import LocalEncoder

    raw = datasets.clinc150(path)
    encoder = LocalEncoder(name=str(model_folder()))
    by_route: dict[str, list[str]] = {}
    for text, label in raw["train"]:
        by_route.setdefault(label, []).append(text)
    router = IndexedRouter(encoder=encoder, routes=[Route(name=n, utterances=u) for n, u in by_route.items()])
    Xv, yv = split_texts(raw, "val", "oos_val")
    report = router.fit(Xv, [None if lab == "oos" else str(lab) for lab in yv])
    router.confidence_threshold = 0.5

    def top(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        picks = [router(t, threshold=0.0) for t in texts]  # the top route and its calibrated confidence
        return np.asarray([p.name or "" for p in picks]), np.asarray([p.confidence or 0.0 for p in picks])

    Xt, yt = split_texts(raw, "test", "oos_test")
    top_t, conf_t = top(Xt)
    assert all((router(t).name or "") == (n if c >= 0.5 else "") for t, n, c in zip(Xt[:20], top_t[:20], conf_t[:20], strict=True))
    top_v, conf_v = top(Xv)
    lat = per_message_ms(router, latency_sample(raw, args.latency_n))
    rows = {}
    for name, threshold in (("semantic-router", 0.5), ("semantic-router-valtuned", best_threshold(conf_v, top_v, yv))):
        routed = conf_t >= threshold
        rows[name] = routing_row(np.where(routed, "route", "oos"), np.where(routed, top_t, ""), yt, conf_t, lat,
                                 confidence_threshold=round(threshold, 4), fit_val_accuracy=round(report.accuracy, 4), fit_val_ece=round(report.ece, 4))
    return {"rows": rows}


def kept_experiment() -> str:
    """The trained-family configuration bench/routing/clinc150.py's chooser kept (its results file)."""
    try:
        chosen = json.loads((RESULTS / "router_clinc150.json").read_text(encoding="utf-8"))["chosen"]["trained"]["experiment"]
    except (OSError, KeyError, ValueError):
        chosen = "ft-lr-energy+maha+knn"
    return str(chosen)


def run_querywise_router(args: argparse.Namespace, path: Path, *, fine_tuned: bool) -> dict[str, Any]:
    from bench.routing.router import EXPERIMENTS, OOS_WEIGHT, POINT, OperatingPoint, calibrate, decide, fine_tuned_encoder, load_data, outcomes
    from querywise.embed import OnnxEmbedder

    name = kept_experiment().removeprefix("ft-")
    exp = next(e for e in EXPERIMENTS if e.name == ("ft-" + name if fine_tuned else name))
    folder = fine_tuned_encoder(path) if fine_tuned else None
    data = load_data(path, cache_dir=None, model_folder=folder)  # nothing cached: no vector written to disk
    X, y = data["train"]
    if exp.with_oos_train:
        X, y = np.vstack([X, data["oos_train"][0]]), np.concatenate([y, data["oos_train"][1]])
    clf = exp.make().fit(X, y)
    Xv = np.vstack([data["val"][0], data["oos_val"][0]])
    yv: Any = np.concatenate([data["val"][1], data["oos_val"][1]])  # intents: str, as the library takes them
    Xt, yt = np.vstack([data["test"][0], data["oos_test"][0]]), np.concatenate([data["test"][1], data["oos_test"][1]])
    embedder = OnnxEmbedder.fp32(export_dir=None, model_folder=folder, threads=args.threads)  # load_embedder's "onnx", uncached
    raw = datasets.clinc150(path)
    rows, base = {}, "querywise-finetuned" if fine_tuned else "querywise-frozen"
    for suffix, point in (("", POINT), ("-nodefer", OperatingPoint(min_answered=None, max_deferred=0.0))):
        th = calibrate(clf, Xv, yv, point, oos_weight=OOS_WEIGHT).thresholds

        def route_one(text: str, th: Any = th) -> Any:
            v = np.asarray(embedder.embed([text]), dtype=np.float32)
            return decide(clf.scores(v)[0], float(clf.in_scope(v)[0]), clf.labels, th)

        kind, label, signal = outcomes(clf, Xt, th)
        rows[base + suffix] = routing_row(kind, label, yt, signal, per_message_ms(route_one, latency_sample(raw, args.latency_n)),
                                          experiment=exp.name, operating_point=point.describe(),
                                          thresholds={"min_margin": round(th.min_margin, 4), "min_in_scope": round(th.min_in_scope, 4)})
    return {"rows": rows}


def run_clinc(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = clinc_subset(args.data, args.limit, Path(tmp))
        if args.system == "semantic-router":
            out = run_semantic_router(args, path)
        else:
            out = run_querywise_router(args, path, fine_tuned=args.system == "querywise-router-ft")
    for row in out["rows"].values():
        row.update(memory())
    return out


# --------------------------------------------------------------------------- driver


def child(args: argparse.Namespace) -> None:
    system = BY_NAME[args.system]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()[0]
    out = run_scifact(args) if system.task == "scifact" else run_clinc(args)
    for row in out["rows"].values():
        row["version"] = version(system)
        row["measured"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        row["load_avg_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]  # at the start and end: latency on a busy machine is not latency
    args.out.write_text(json.dumps({"task": system.task, **out}, indent=1) + "\n", encoding="utf-8")


def planned(args: argparse.Namespace) -> list[System]:
    only = set(filter(None, args.only.split(",")))
    unknown = only - set(BY_NAME)
    if unknown:
        raise SystemExit(f"unknown systems {sorted(unknown)}; known: {', '.join(BY_NAME)}")
    out = []
    for s in SYSTEMS:
        if only and s.name not in only:
            continue
        if s.name == "querywise-hybrid+rerank" and args.cross_encoder is None:
            log("querywise-hybrid+rerank left out: no --cross-encoder FOLDER given")
        elif s.name == "querywise-router-ft" and not args.fine_tune:
            log("querywise-router-ft left out: --fine-tune not given")
        elif missing := missing_modules(s):
            log(f"{s.name} skipped: {', '.join(missing)} not installed (pip install -c requirements.lock -r bench/requirements-peers.txt)")
        else:
            out.append(s)
    return out


def passthrough(args: argparse.Namespace) -> list[str]:
    out = ["--work", str(args.work), "--data", str(args.data), "--latency-n", str(args.latency_n)]
    for flag, value in (("--limit-docs", args.limit_docs), ("--limit-queries", args.limit_queries), ("--limit", args.limit),
                        ("--cross-encoder", args.cross_encoder), ("--threads", args.threads)):
        if value is not None:
            out += [flag, str(value)]
    return out


def run_children(args: argparse.Namespace, systems: Sequence[System]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {"scifact": {}, "clinc150": {}, "runs": {}}
    if any(s.task == "scifact" and s.name.startswith("querywise") for s in systems):
        subprocess.run([sys.executable, "-m", "bench.retrieval.peers", "--export-onnx", "--work", str(args.work)], cwd=ROOT, check=True)
    for s in systems:
        out = args.work / f"{s.name}.json"
        cmd = [sys.executable, "-m", "bench.retrieval.peers", "--system", s.name, "--out", str(out), *passthrough(args)]
        log("$ " + " ".join(cmd))
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT)
        if done.returncode != 0 or not out.exists():
            log(f"{s.name} FAILED (exit {done.returncode})")
            results[s.task][s.name] = {"error": f"exit {done.returncode}", "version": version(s), "config": s.config}
            continue
        got = json.loads(out.read_text(encoding="utf-8"))
        for name, row in got["rows"].items():
            results[s.task][name] = {**row, "config": row_config(s, name, row)}
            log(f"{name}: {row} ({time.perf_counter() - t0:.0f}s)")
        if "run" in got:
            results["runs"][s.name] = got["run"]
    return results


#: What a row adds to its system's configuration (several rows come from one fitted router).
VARIANTS = {
    "semantic-router": "confidence_threshold = 0.5 (its README's: more likely right than wrong)",
    "semantic-router-valtuned": "one global threshold chosen on val for 0.5 x in-scope accuracy + 0.5 x OOS recall (written here)",
    "querywise-frozen": "thresholds by calibrate on val at answered >= 97% (97.5% on val), deferred <= 10%",
    "querywise-finetuned": "thresholds by calibrate on val at answered >= 97% (97.5% on val), deferred <= 10%",
    "querywise-frozen-nodefer": "calibrate on val with a deferral budget of 0: every message decided, the oos gate chosen for 0.5 x in-scope acc + 0.5 x OOS recall",
    "querywise-finetuned-nodefer": "calibrate on val with a deferral budget of 0: every message decided, the oos gate chosen for 0.5 x in-scope acc + 0.5 x OOS recall",
}


def row_config(system: System, name: str, row: dict[str, Any]) -> str:
    chosen = f"chosen on train: {row['chosen']}" if "chosen" in row else ""
    return "; ".join(filter(None, (system.config, VARIANTS.get(name, ""), chosen)))


def metric_check(args: argparse.Namespace, runs: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """ranx's nDCG@10 / recall@100 of every SciFact run beside ours (bench.measures.ranx_check)."""
    if not runs or args.no_ranx:
        return {"skipped": "--no-ranx"} if runs else {}
    from bench.measures import ranx_check

    _, cases = scifact_data("test", args.limit_docs, args.limit_queries)
    qrels = {c.id: c.relevant for c in cases}
    return {name: ranx_check(run, qrels) for name, run in runs.items()}


def _task_table(rows: dict[str, dict[str, Any]], header: str, cells: Callable[[dict[str, Any]], str]) -> list[str]:
    """One task's results table (a failed system's error in its first cell), then its configurations."""
    width = header.count("|") + 1
    out = [f"| system | {header} | version |", "|---|" + "---|" * (width + 1)]
    for name, r in rows.items():
        shown = f"failed: {r['error']}" + " |" * (width - 1) if "error" in r else cells(r)
        out.append(f"| {name} | {shown} | {r['version']} |")
    return [*out, "", "| system | configuration |", "|---|---|", *(f"| {n} | {r['config']} |" for n, r in rows.items()), ""]


def markdown(data: dict[str, Any], command: str) -> str:
    limits = {k: v for k, v in data["protocol"]["limits"].items() if v}
    lines = ["# Peers on the same tasks, one embedding model", "", f"Command: `{command}`.", "",
             *([f"**Smoke run, not a result**: limited to {limits}.", ""] if limits else []),
             "Every system in its own process; the packaged all-MiniLM-L6-v2 from its folder (the peers through sentence-transformers, "
             "querywise through its default ONNX export of it). See the module docstring of bench/retrieval/peers.py for each configuration.", "",
             "## SciFact hybrid retrieval (BEIR test)", "",
             *_task_table(data["scifact"], "nDCG@10 | recall@100 | build s (embedding incl.) | latency p50 ms | p95 ms | peak RSS MiB",
                          lambda r: f"{r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {r['build_s']} | {r['latency_p50_ms']:.1f} | "
                                    f"{r['latency_p95_ms']:.1f} | {r['peak_rss_mb']}"),
             "## CLINC150 routing (test + oos_test)", "",
             *_task_table(data["clinc150"], "in-scope acc | answered acc | deferred | OOS recall | latency p50 ms (embedding incl.)",
                          lambda r: f"{r['in_scope_accuracy']:.4f} | {r['answered_accuracy']:.4f} | {r['deferred_share']:.4f} | "
                                    f"{r['oos_recall']:.4f} | {r['latency_p50_ms']:.1f}")]
    lines += ["## Follow-up move", "", data["followup"], ""]
    return "\n".join(lines)


def write(args: argparse.Namespace, data: dict[str, Any], command: str) -> Path:
    args.results.mkdir(parents=True, exist_ok=True)
    info = {**machine_info(), "command": command}
    path = args.results / "peers.json"
    path.write_text(json.dumps({"machine": info, **data}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.results / "peers.md").write_text(markdown(data, command), encoding="utf-8")
    return path


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help=f"comma-separated systems: {', '.join(BY_NAME)}")
    ap.add_argument("--limit-docs", type=int, help="smoke: SciFact abstracts (the chosen queries' relevant ones first)")
    ap.add_argument("--limit-queries", type=int, help="smoke: SciFact test (and train, for tuning) queries")
    ap.add_argument("--limit", type=int, help="smoke: CLINC150 messages per split (3x for train), evenly spaced")
    ap.add_argument("--latency-n", type=int, default=1000, help="CLINC150 test messages timed one at a time")
    ap.add_argument("--threads", type=int, help="intra-op threads for torch and ONNX Runtime in every system (default: each library's own)")
    ap.add_argument("--cross-encoder", type=Path, help="a local cross-encoder folder: adds querywise-hybrid+rerank")
    ap.add_argument("--fine-tune", action="store_true", help="add querywise's router on router_clinc150's fine-tuned encoder")
    ap.add_argument("--update", action="store_true",
                    help="replace only the rows of the systems run in the existing peers.json (each row keeps its own measured date)")
    ap.add_argument("--no-ranx", action="store_true", help="skip the ranx cross-check of the SciFact metrics (numba compiles ~30 s)")
    ap.add_argument("--data", type=Path, default=datasets.CLINC150, help="CLINC150 data_full.json")
    ap.add_argument("--work", type=Path, help="children's outputs and querywise's index folders (default bench/work/peers)")
    ap.add_argument("--results", type=Path, help="where peers.json/peers.md go (default bench/results; /tmp for a smoke run)")
    ap.add_argument("--system", choices=list(BY_NAME), help=argparse.SUPPRESS)  # a child: one system
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--export-onnx", action="store_true", help=argparse.SUPPRESS)  # a child: querywise's ONNX export
    a = ap.parse_args(argv)
    smoke = any(v is not None for v in (a.limit_docs, a.limit_queries, a.limit))
    a.work = a.work or (SMOKE_DIR / "work" if smoke else WORK / "peers")
    a.results = a.results or (SMOKE_DIR if smoke else RESULTS)
    if smoke and a.results.resolve() == RESULTS.resolve():
        ap.error("a smoke run (--limit*) never writes bench/results/: give --results elsewhere")
    if a.limit and (a.fine_tune or a.system == "querywise-router-ft"):
        ap.error("--fine-tune with --limit would train router_clinc150's kept encoder on a subset: fine-tune on the full data only")
    return a


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.export_onnx:
        export_onnx(args)
        return
    if args.system:
        child(args)
        return
    command = " ".join([COMMAND, *sys.argv[1:]])
    t0 = time.time()
    results = run_children(args, planned(args))
    runs = results.pop("runs")
    checks = metric_check(args, runs)
    if args.update and (old := args.results / "peers.json").exists():
        # The systems not run keep their rows (and ranx checks) from the earlier run.
        before = json.loads(old.read_text(encoding="utf-8"))
        for task in ("scifact", "clinc150"):
            results[task] = {**before.get(task, {}), **results[task]}
        checks = {**before.get("metric_check", {}), **checks}
        command = f"{before['machine']['command']}, then {command}"
    data = {**results, "metric_check": checks, "followup": FOLLOWUP,
            "protocol": {"k": K, "rrf_k": RRF_K, "model_folder": str(model_folder()), "threads": args.threads or "each library's default", "limits": {"docs": args.limit_docs, "queries": args.limit_queries, "clinc_per_split": args.limit},
                         "peer_packages": {s.name: version(s) for s in SYSTEMS if not missing_modules(s)},
                         "sentence-transformers": _version("sentence-transformers"), "torch": _version("torch")},
            "wall_s": round(time.time() - t0, 1)}
    log(f"wrote {write(args, data, command)}")


if __name__ == "__main__":
    main()
