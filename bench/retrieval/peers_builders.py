"""The SciFact systems of bench/retrieval/peers.py and the loop a peers child serves them in.

A child builds one system (a peer through its own API, or querywise through the library) or opens a
folder the user's path built (bench/retrieval/peers_cli.py), then answers one query a line on
stdin with the ids and the seconds of that one public-API call, so the driver can interleave every
system query by query. Its protocol goes to the stdout it started with; whatever a library prints
goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench import ROOT, datasets, log, peak_rss_mib

K = 100  # retrieved per list and returned: recall@100 needs 100
RRF_K = 60
WARM_QUERIES = 5
# Between two timed calls the driver waits until every system's process has run less than a tenth
# of a QUIET_WINDOW_S window (at most QUIET_CAP_S): PyTorch's OpenMP threads keep spinning after a
# call (libgomp's spin-wait), and timed right after a peer's call a search got those threads' cores
# less (bench/results/interference.md). The same rule for every system: each call starts on cores
# no other system is using.
QUIET_WINDOW_S, QUIET_CAP_S = 0.002, 1.0


def model_folder() -> Path:
    from querywise.embed import model_dir

    return model_dir()


def memory() -> dict[str, float]:
    return {"peak_rss_mb": peak_rss_mib(), "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}


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
        if split == "test":  # the same abstracts whichever split asks, so a tuned row finds its train judgements
            keep |= {d for c in datasets.scifact("train")[1][:limit_queries] for d in c.relevant}
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


def user_path(args: argparse.Namespace) -> Builder:
    """A folder `querywise index` built (bench/retrieval/peers_cli.py), opened as a user's code opens
    it: `Index.open` with the settings of its TOML (`load_settings`), the embedder they name."""
    from querywise.config import load_settings
    from querywise.index import Index

    index = Index.open(args.index_dir, settings=load_settings(args.config))

    def build(_: Sequence[Any]) -> Built:
        return Built(lambda q: [h.id for h in index.search(q, mode="hybrid", k=K)])

    return build


SCIFACT_BUILDERS: dict[str, Callable[[argparse.Namespace], Builder]] = {
    "haystack": haystack,
    "llamaindex": llamaindex,
    "langchain": langchain,
    "langchain-lowercase": lambda a: langchain(a, lowercase=True),
    "querywise": user_path,
    "querywise-tuned": user_path,
    "querywise-int8": user_path,
    "querywise-sentences-tuned": user_path,
    "querywise-hybrid": querywise_builder,
    "querywise-sentences": lambda a: querywise_builder(a, tuned=True, sentences=True),
    "querywise-hybrid+rerank": lambda a: querywise_builder(a, cross_encoder=a.cross_encoder),
}


def serve(args: argparse.Namespace) -> None:
    """Build (or open) `args.system`, say so with its build figures, then answer the driver: a line
    {"q": text} gets {"ids": [...], "s": seconds of the search call alone}; any other line ends it
    with the child's peak memory."""
    proto = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a library's prints must not enter the protocol
    chunks, _ = scifact_data("test", args.limit_docs, args.limit_queries)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    builder = SCIFACT_BUILDERS[args.system](args)
    load_s, rss_loaded = time.perf_counter() - t0, peak_rss_mib()
    t0 = time.perf_counter()
    built = builder(chunks)
    build_s = time.perf_counter() - t0 - built.untimed_s
    ready = {"build_s": round(build_s, 2), "load_s": round(load_s, 2), "peak_rss_after_load_mb": rss_loaded, "n_docs": len(chunks),
             "load_avg_1min_build": [round(load_before, 2), round(os.getloadavg()[0], 2)], **memory(), **built.notes}
    proto.write(json.dumps({"ready": ready}) + "\n")
    for line in sys.stdin:
        message = json.loads(line)
        if "q" not in message:
            break
        t0 = time.perf_counter()
        ids = built.search(message["q"])
        seconds = time.perf_counter() - t0
        proto.write(json.dumps({"ids": ids, "s": seconds}) + "\n")
    proto.write(json.dumps({"done": memory()}) + "\n")
    proto.close()


def cpu_seconds(pid: int) -> float:
    """CPU seconds all threads of process `pid` have run so far (the scheduler's nanoseconds, not
    clock ticks, which are too coarse for a few milliseconds of spinning); 0 without /proc."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0.0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total / 1e9


def wait_quiet(pids: Sequence[int], *, window: float = QUIET_WINDOW_S, cap: float = QUIET_CAP_S) -> float:
    """Wait until the processes `pids` together run less than a tenth of `window` in one window of
    that length (threads still spinning after a call have stopped), at most `cap` seconds; the
    seconds waited."""
    t0 = time.perf_counter()
    before = sum(cpu_seconds(p) for p in pids)
    while time.perf_counter() - t0 < cap:
        time.sleep(window)
        now = sum(cpu_seconds(p) for p in pids)
        if now - before < window / 10:
            break
        before = now
    return time.perf_counter() - t0


class Worker:
    """The driver's side of `serve`: a child serving one SciFact system, over its pipes."""

    def __init__(self, name: str, cmd: Sequence[str], env: dict[str, str]) -> None:
        log("$ " + " ".join(cmd))
        self.name = name
        self.proc = subprocess.Popen(list(cmd), cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready: dict[str, Any] = self._read()["ready"]

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        return self.proc.stdin, self.proc.stdout

    def _read(self) -> dict[str, Any]:
        line = self._pipes()[1].readline()
        if not line:
            raise RuntimeError(f"{self.name}: the child ended (exit {self.proc.wait()})")
        return dict(json.loads(line))

    def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        stdin = self._pipes()[0]
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()
        return self._read()

    def search(self, query: str) -> tuple[list[str], float]:
        got = self._send({"q": query})
        return list(got["ids"]), float(got["s"])

    def close(self) -> dict[str, Any]:
        done = self._send({"end": True})["done"]
        self.proc.wait()
        return dict(done)


@dataclass
class Interleaved:
    """What `interleave` measured: each system's ranked ids per case, the seconds of each of its
    calls, and the seconds the driver then waited for every system's process to go quiet."""

    runs: dict[str, dict[str, list[str]]]
    seconds: dict[str, list[float]]
    quiet_after: dict[str, list[float]]


def interleave(workers: dict[str, Worker], cases: Sequence[Any]) -> Interleaved:
    """Every query through every system in turn, the first system rotating query by query, so a burst
    of other work on the machine falls on all of them alike; a few warm-up queries first. Each call
    starts once every system's process is quiet (`wait_quiet`)."""
    names = list(workers)
    pids = [w.proc.pid for w in workers.values()]
    for case in cases[:WARM_QUERIES]:
        for name in names:
            workers[name].search(case.message)
            wait_quiet(pids)
    out = Interleaved({n: {} for n in names}, {n: [] for n in names}, {n: [] for n in names})
    for i, case in enumerate(cases):
        for name in names[i % len(names):] + names[: i % len(names)]:
            out.runs[name][case.id], took = workers[name].search(case.message)
            out.seconds[name].append(took)
            out.quiet_after[name].append(wait_quiet(pids))
    return out
