"""The same tasks in the peers' idiomatic configurations (#19 item 1, #39 item 3), with one embedding model.

    .venv/bin/python -m bench.retrieval.peers              # SciFact: the peers and querywise as a user runs it, one run
    .venv/bin/python -m bench.retrieval.peers --only langchain-lowercase,querywise-hybrid,querywise-sentences   # the other rows
    .venv/bin/python -m bench.retrieval.peers --only semantic-router,querywise-router --fine-tune   # CLINC150 routing
    .venv/bin/python -m bench.retrieval.peers --limit-docs 100 --limit-queries 10 --no-ranx   # smoke run, written to /tmp

Peers: `pip install -c requirements.lock -r bench/requirements-peers.txt` (see that file: three
packages go in with --no-deps). Systems whose packages are missing are skipped with a message.
A task run replaces that task's table whole; a task not run keeps its rows, and SciFact rows of
earlier runs that this one did not make are shown apart with their dates.

**SciFact hybrid retrieval** (BEIR test: 300 queries, 5,183 abstracts; the peers get one text per
abstract, title, newline, abstract). Every system retrieves 100 per list and returns 100 fused
(recall@100), fuses by RRF with constant 60, and embeds with the packaged all-MiniLM-L6-v2 from
its folder (`querywise.embed.model_dir()`, offline), the peers through sentence-transformers:
- haystack: InMemoryDocumentStore (defaults: BM25L k1=1.5 b=0.75 delta=0.5, dot product on the
  model's unit vectors) + InMemoryBM25Retriever + InMemoryEmbeddingRetriever(top_k=100) +
  DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=100; k=61 on 0-based ranks = 60 on
  1-based), SentenceTransformersDocumentEmbedder/TextEmbedder; query side in a Pipeline.
- llamaindex: VectorStoreIndex (SimpleVectorStore) over one TextNode per abstract,
  HuggingFaceEmbedding; BM25Retriever.from_defaults (bm25s, English stop words, PyStemmer
  english); QueryFusionRetriever(mode="reciprocal_rerank", num_queries=1, similarity_top_k=100;
  k=60 on 0-based ranks, not settable) with a MockLLM, which num_queries=1 never calls.
- langchain: BM25Retriever.from_texts (rank_bm25 BM25Okapi; default preprocess_func str.split:
  whitespace only, NO lowercasing) + InMemoryVectorStore with HuggingFaceEmbeddings,
  EnsembleRetriever (langchain-classic; equal weights, c=60), top 100. langchain-lowercase
  (not in the default run): preprocess_func = lowercase, then whitespace split.
- querywise, querywise-int8, querywise-tuned: the README's commands (bench/retrieval/peers_cli.py):
  `querywise index SciFact --index DIR --skip-invalid` with the default settings (int8: one TOML
  line, `[embedding] kind = "onnx-int8"`) against an empty cache folder of its own, so the build is
  a first one: the ONNX export (its child's lifetime is export_s) and every vector are in build_s,
  the whole command's wall time. `querywise eval SciFact --split test` scores it (QueryWise.ask,
  default moves; the README path cuts SciFact into 10,122 chunks of at most 1,000 characters,
  judged per abstract). querywise-tuned runs `querywise tune SciFact --split train -i DIR
  --write-config tuned.toml` on the querywise row's folder (train queries only) and evals with it.
  querywise-sentences-tuned: the README's advice for claims against abstracts, `[index]
  sentence_vectors = true` with each abstract whole (`[chunking] max_chars = 20000`), then the same
  tune on its own folder (which also picks sentence_share).
- querywise-hybrid / querywise-sentences (not in the default run): the library on this loader
  (build_index + Index.search, ONNX export made beforehand, vector cache off); -sentences with
  `[index] sentence_vectors` and tune's fusion. querywise-hybrid+rerank: with --cross-encoder.
One run: the systems are built one after the other (the user's path by its commands; a peer in the
child that then serves it), then every test query goes through every system's public API in turn,
the first system rotating query by query (a peer's retriever; querywise's
`Index.open(DIR, settings=load_settings(TOML)).search(q, mode="hybrid", k=100)`), each child timing
its own call, after 5 warm-up queries: the latencies share the machine's load. Between two calls
the driver waits until no system's process runs (`peers_builders.wait_quiet`: under a tenth of a
2 ms window, at most 1 s), the same rule for every system: PyTorch's OpenMP workers keep spinning
after a peer's call, and a search timed right after it paid for their cores, a cost no user of
either library pays in their own deployment (bench/results/interference.md). The wait after each
system's calls is kept in its row (quiet_after_call_ms). Every row records its date and the
1-minute load average around its build and around the interleaved queries.
Memory: a peer's is the VmHWM of its one process (build and queries); querywise's the larger of
its build's process tree (PSS sampled every 50 ms: the export's child and the BM25 workers
included) and its serving process. A peer's build_s leaves model loading out (load_s).
nDCG@10 and recall@100: bench.measures.evaluate (the BEIR/ranx definitions) for the peers'
runs, cross-checked with ranx in `metric_check`; `querywise eval`'s own for querywise's rows.
`must_show` checks issue #39's bars on the run's rows. Every library runs with its own default
thread settings (`--threads N` caps torch and ONNX Runtime in the peers' children).

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
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import RESULTS, ROOT, WORK, datasets, log, percentiles
from bench.report import _version, machine_info
from bench.retrieval import peers_cli
from bench.retrieval.peers_builders import RRF_K, K, Worker, export_onnx, interleave, model_folder, scifact_data

COMMAND = ".venv/bin/python -m bench.retrieval.peers"
SMOKE_DIR = Path(tempfile.gettempdir()) / "querywise-peers-smoke"
FOLLOWUP = ("Left out: LangChain's create_history_aware_retriever rewrites a follow-up with an LLM, and no peer here has an "
            "LLM-free follow-up move to compare with querywise's deterministic one; querywise's is measured in "
            "bench/results/rewrite_cast2019.* and conversations.*.")
# What "what it must show" (issue #39) asks of the one run.
BUILD_SHARE, MIN_GAIN, MAX_INT8_LOSS, LATENCY_SHARE = 0.5, 0.02, 0.003, 0.1


@dataclass(frozen=True)
class System:
    name: str
    task: str  # "scifact" or "clinc150"
    modules: tuple[str, ...]  # importable modules it needs (the skip check)
    dists: tuple[str, ...]  # distributions named in its "version"
    config: str
    default: bool = True  # in a run without --only


_LC = ("langchain_community", "langchain_classic", "langchain_huggingface", "rank_bm25")
_LC_DISTS = ("langchain-community", "langchain-classic", "langchain-core", "langchain-huggingface", "rank-bm25")
_USER = ("`querywise index SciFact --index DIR --skip-invalid` with a fresh cache folder (a first build: the ONNX export and every vector "
         "inside its time), scored by `querywise eval SciFact --split test` (QueryWise.ask: default moves, hybrid; 10,122 chunks of 1,000 "
         "characters at most, judged per abstract); latency: Index.open(DIR, settings=load_settings(TOML)).search(q, hybrid, k=100)")
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
    System("langchain-lowercase", "scifact", _LC, _LC_DISTS, "as langchain, with preprocess_func = text.lower().split()", default=False),
    System("querywise", "scifact", ("querywise",), ("querywise",), "the README's path with the default settings: " + _USER),
    System("querywise-int8", "scifact", ("querywise",), ("querywise",),
           "as querywise, with one line of TOML: [embedding] kind = \"onnx-int8\" (the fp32 export quantized per channel, made on first use)"),
    System("querywise-tuned", "scifact", ("querywise",), ("querywise",),
           "as querywise, after the README's `querywise tune SciFact --split train -i DIR --write-config tuned.toml` on its folder "
           "(809 train queries; never test), evaluated and opened with tuned.toml; build s is the querywise row's build, tune_s apart"),
    System("querywise-sentences-tuned", "scifact", ("querywise",), ("querywise",),
           "the README's advice for claims against abstracts: as querywise with [index] sentence_vectors = true "
           "(each chunk's title and sentences as a best-sentence multivector, a third hybrid list) and [chunking] max_chars = 20000 "
           "(each abstract one chunk: 5,183), then `querywise tune SciFact "
           "--split train` on its own folder (train queries only; it also chooses sentence_share), evaluated and opened with tuned.toml; "
           "build s is its own build, tune_s apart"),
    System("querywise-hybrid", "scifact", ("querywise",), ("querywise",),
           "the library on the bench's loader (one record per abstract, 5,183): build_index + Index.search(hybrid, k=100), ONNX fp32 "
           "exported beforehand, vector cache off; no query moves", default=False),
    System("querywise-sentences", "scifact", ("querywise",), ("querywise",),
           "as querywise-hybrid, built with [index] sentence_vectors (a best-sentence multivector per abstract, a third hybrid list); "
           "fusion/dense_weight/sentence_share chosen by querywise.evaluation.tune on SciFact train qrels", default=False),
    System("querywise-hybrid+rerank", "scifact", ("querywise", "sentence_transformers"), ("querywise", "sentence-transformers"),
           "querywise-hybrid, then querywise's CrossEncoderReranker (--cross-encoder folder) over the top 20", default=False),
    System("semantic-router", "clinc150", ("semantic_router",), ("semantic-router",),
           "IndexedRouter (LocalIndex, top_k=5, mean) over train utterances, LocalEncoder on the model folder; fit() on val+oos_val (Platt)",
           default=False),
    System("querywise-router", "clinc150", ("querywise",), ("querywise",),
           "bench.routing.clinc150's kept trained configuration (fitted on train) on the frozen encoder (ONNX fp32)", default=False),
    System("querywise-router-ft", "clinc150", ("querywise",), ("querywise",),
           "as querywise-router, on router_clinc150's fine-tuned encoder (one epoch on train)", default=False),
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _load() -> float:
    return round(os.getloadavg()[0], 2)


# --------------------------------------------------------------------------- the SciFact run


def user_source(args: argparse.Namespace) -> Path:
    """SciFact's BEIR folder as the README indexes it, or (smoke) the same abstracts the peers get."""
    if not (args.limit_docs or args.limit_queries):
        return datasets.SCIFACT
    chunks, _ = scifact_data("test", args.limit_docs, args.limit_queries)
    queries = {c.id for split in ("test", "train") for c in scifact_data(split, args.limit_docs, args.limit_queries)[1]}
    return peers_cli.beir_subset(datasets.SCIFACT, args.work / "scifact-subset", {c.id for c in chunks}, queries)


def _progress(args: argparse.Namespace, name: str, figures: dict[str, Any]) -> None:
    """Each row's figures as soon as they are measured (work/progress.json): a run stopped before its
    end (it builds for an hour on a busy machine) still leaves what it measured."""
    path = args.work / "progress.json"
    done = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.write_text(json.dumps({**done, name: {**figures, "recorded": _now(), "load_avg_1min_now": _load()}}, indent=1) + "\n", encoding="utf-8")


def run_scifact(args: argparse.Namespace, systems: Sequence[System]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, list[str]]]]:
    """Build every system one after the other (the user's path by its commands, the others inside
    their serving child), then time them all query by query; rows and the peers' runs."""
    from bench.measures import evaluate

    source = user_source(args)
    (args.work / "progress.json").unlink(missing_ok=True)
    rows: dict[str, dict[str, Any]] = {}
    user: dict[str, dict[str, Any]] = {}
    for name in peers_cli.ROWS:
        if name in {s.name for s in systems}:
            base = Path(user["querywise"]["index"]) if name == "querywise-tuned" and "querywise" in user else None
            if name == "querywise-tuned" and base is None:
                log("querywise-tuned left out: it tunes the querywise row's folder")
                continue
            log(f"{name}: the user's path")
            user[name] = {**peers_cli.build_and_eval(peers_cli.ROWS[name], source, args.work, ROOT, base), "measured": _now()}
            log(f"{name}: {user[name]}")
            _progress(args, name, user[name])
    if any(s.name in ("querywise-hybrid", "querywise-sentences", "querywise-hybrid+rerank") for s in systems):
        export_onnx(args)
    workers: dict[str, Worker] = {}
    try:
        for s in systems:
            if s.name in peers_cli.ROWS and s.name not in user:
                continue
            env, extra = dict(os.environ), []
            if s.name in user:
                env["QUERYWISE_CACHE_DIR"] = user[s.name]["cache"]
                extra = ["--index-dir", user[s.name]["index"], "--config", user[s.name]["config"]]
            started = _now()
            cmd = [sys.executable, "-m", "bench.retrieval.peers", "--system", s.name, "--serve", *passthrough(args), *extra]
            workers[s.name] = Worker(s.name, cmd, env)
            workers[s.name].ready["measured"] = started
            log(f"{s.name} ready: {workers[s.name].ready}")
            _progress(args, f"{s.name} serving", workers[s.name].ready)
        _, cases = scifact_data("test", args.limit_docs, args.limit_queries)
        load_before = _load()
        timed = interleave(workers, cases)
        runs, seconds = timed.runs, timed.seconds
        load_after = _load()
        memories = {name: w.close() for name, w in workers.items()}
    finally:
        for w in workers.values():
            if w.proc.poll() is None:
                w.proc.kill()
    qrels = {c.id: c.relevant for c in cases}
    for name, w in workers.items():
        lat = percentiles(seconds[name])
        row: dict[str, Any] = {**w.ready, "latency_p50_ms": lat["p50_ms"], "latency_p95_ms": lat["p95_ms"],
                               "load_avg_1min_latency": [load_before, load_after], "latency_interleaved_with": sorted(set(workers) - {name}),
                               "quiet_after_call_ms": percentiles(timed.quiet_after[name]),
                               "serving_peak_rss_mb": memories[name]["peak_rss_mb"]}
        if name in user:
            figures = user[name]
            row = {**{k: v for k, v in row.items() if k != "n_docs"}, **{k: v for k, v in figures.items() if k not in ("index", "config", "cache")}}
            row["peak_rss_mb"] = max(figures.get("peak_pss_mb", user["querywise"]["peak_pss_mb"] if "querywise" in user else 0.0),
                                     memories[name]["peak_rss_mb"])
            if name == "querywise-tuned" and "querywise" in user:
                row["build_s"] = user["querywise"]["build_s"]
                row["load_avg_1min_build"] = user["querywise"]["load_avg_1min_build"]
        else:
            row = {**evaluate(runs[name], qrels), **row, "peak_rss_mb": memories[name]["peak_rss_mb"], "n_queries": len(cases)}
        rows[name] = {**row, "version": version(BY_NAME[name])}
    return rows, {n: r for n, r in runs.items() if n not in user}


def must_show(rows: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Issue #39's bars over the one run's rows (each with the figures it compares)."""
    peers = {n: r for n, r in rows.items() if not n.startswith("querywise") and "error" not in r}
    qw, int8 = rows.get("querywise"), rows.get("querywise-int8")
    out: list[dict[str, Any]] = []
    if not peers:
        return out

    def add(what: str, ours: float, bar: float, holds: bool, against: str) -> None:
        out.append({"what": what, "querywise": round(ours, 4), "bar": round(bar, 4), "against": against, "holds": holds})

    fastest_build = min(peers, key=lambda n: peers[n]["build_s"])
    if int8 is not None:
        bar = BUILD_SHARE * peers[fastest_build]["build_s"]
        against = f"{fastest_build} {peers[fastest_build]['build_s']} s (model loading not counted)"
        add("cold build with int8, s (the whole command, ONNX export included) <= 1/2 the fastest peer's build", int8["build_s"], bar,
            int8["build_s"] <= bar, against)
        ours = int8.get("build_s_without_export", int8["build_s"])
        add("the same without the one-time export's child (a later corpus on this machine)", ours, bar, ours <= bar, against)
    for name in peers_cli.ROWS:
        if name in rows:
            worst = min(peers, key=lambda n: peers[n]["peak_rss_mb"])
            ours = rows[name]["peak_rss_mb"]
            add(f"{name} peak memory, MiB (build and serving) < every peer's", ours, peers[worst]["peak_rss_mb"],
                ours < peers[worst]["peak_rss_mb"], f"lowest peer: {worst}")
    best = max(peers, key=lambda n: peers[n]["ndcg@10"])
    for name in ("querywise-tuned", "querywise-sentences-tuned"):
        if name in rows:
            bar, ours = peers[best]["ndcg@10"] + MIN_GAIN, rows[name]["ndcg@10"]
            add(f"{name} SciFact nDCG@10 >= best peer + 0.02", ours, bar, ours >= bar, f"{best} {peers[best]['ndcg@10']}")
    if int8 is not None and qw is not None:
        bar = qw["ndcg@10"] - MAX_INT8_LOSS
        add("int8 SciFact nDCG@10 >= fp32 - 0.003", int8["ndcg@10"], bar, int8["ndcg@10"] >= bar, f"querywise (fp32) {qw['ndcg@10']}")
    fastest = min(peers, key=lambda n: peers[n]["latency_p50_ms"])
    for name in ("querywise", "querywise-int8"):
        if name in rows:
            bar = LATENCY_SHARE * peers[fastest]["latency_p50_ms"]
            add(f"{name} query p50 ms through the public API <= 1/10 of the fastest peer's", rows[name]["latency_p50_ms"], bar,
                rows[name]["latency_p50_ms"] <= bar, f"{fastest} {peers[fastest]['latency_p50_ms']} ms")
    return out


# --------------------------------------------------------------------------- driver


def child(args: argparse.Namespace) -> None:
    """A CLINC150 system in this process, its rows written to --out (SciFact systems serve instead)."""
    from bench.retrieval.peers_routing import run_clinc

    system = BY_NAME[args.system]
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    load_before = _load()
    out = run_clinc(args)
    for row in out["rows"].values():
        row["version"] = version(system)
        row["measured"] = _now()
        row["load_avg_1min"] = [load_before, _load()]  # at the start and end: latency on a busy machine is not latency
    args.out.write_text(json.dumps({"task": system.task, **out}, indent=1) + "\n", encoding="utf-8")


def planned(args: argparse.Namespace) -> list[System]:
    only = set(filter(None, args.only.split(",")))
    unknown = only - set(BY_NAME)
    if unknown:
        raise SystemExit(f"unknown systems {sorted(unknown)}; known: {', '.join(BY_NAME)}")
    out = []
    for s in SYSTEMS:
        if (only and s.name not in only) or (not only and not s.default):
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


def run_clinc_children(args: argparse.Namespace, systems: Sequence[System]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for s in systems:
        out = args.work / f"{s.name}.json"
        cmd = [sys.executable, "-m", "bench.retrieval.peers", "--system", s.name, "--out", str(out), *passthrough(args)]
        log("$ " + " ".join(cmd))
        done = subprocess.run(cmd, cwd=ROOT)
        if done.returncode != 0 or not out.exists():
            log(f"{s.name} FAILED (exit {done.returncode})")
            results[s.name] = {"error": f"exit {done.returncode}", "version": version(s), "config": s.config}
            continue
        for name, row in json.loads(out.read_text(encoding="utf-8"))["rows"].items():
            results[name] = {**row, "config": row_config(s, name, row)}
            log(f"{name}: {row}")
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


def _load_cell(r: dict[str, Any]) -> str:
    build = r.get("load_avg_1min_build", r.get("load_avg_1min", []))
    latency = r.get("load_avg_1min_latency")
    return "-".join(map(str, build)) + (f" / {'-'.join(map(str, latency))}" if latency else "")


SCIFACT_HEADER = ("nDCG@10 | recall@100 | build s (embedding incl.) | latency p50 ms | p95 ms | peak memory MiB | measured | "
                  "1-min load: build / latency")


def _scifact_cells(r: dict[str, Any]) -> str:
    return (f"{r['ndcg@10']:.4f} | {r['recall@100']:.4f} | {r['build_s']} | {r['latency_p50_ms']:.1f} | {r['latency_p95_ms']:.1f} | "
            f"{r['peak_rss_mb']} | {r.get('measured', '?')} | {_load_cell(r)}")


def markdown(data: dict[str, Any], command: str) -> str:
    limits = {k: v for k, v in data["protocol"]["limits"].items() if v}
    commands = data.get("commands", {})
    lines = ["# Peers on the same tasks, one embedding model", "",
             *([f"**Smoke run, not a result**: limited to {limits}.", ""] if limits else []),
             "Every system in its own process; the packaged all-MiniLM-L6-v2 from its folder (the peers through sentence-transformers, "
             "querywise through its ONNX export of it). See the module docstring of bench/retrieval/peers.py for each configuration.", "",
             "## SciFact hybrid retrieval (BEIR test)", "",
             f"Command: `{commands.get('scifact', command)}`. One run: the systems built one after the other, then every test query "
             "through every system's public API in turn (the first system rotating query by query), so the latencies share the "
             "machine's load, each call started once no system's process was running (threads a peer's call left spinning had "
             "stopped: the same rule for every row, bench/results/interference.md); each row gives the 1-minute load average before "
             "and after its build and around the interleaved queries. querywise's rows follow the README (the commands in the configuration table); their peak memory is the "
             "larger of the build's process tree (PSS, the ONNX export's child and the BM25 workers included) and the serving process; "
             "a peer's is the VmHWM of the one process that built and served it. A peer's build s leaves out loading its model "
             "(load_s in peers.json); querywise's is the whole `querywise index` command.", "",
             *_task_table(data["scifact"], SCIFACT_HEADER, _scifact_cells)]
    if checks := data.get("must_show"):
        lines += ["What issue #39 asks of this run:", "", "| bar | querywise | bar value | against | holds |", "|---|---|---|---|---|",
                  *(f"| {c['what']} | {c['querywise']} | {c['bar']} | {c['against']} | {'yes' if c['holds'] else '**no**'} |" for c in checks), ""]
    if earlier := data.get("scifact_earlier"):
        lines += ["Rows of earlier runs (each on its own date and load, not part of the run above; kept until re-measured):", "",
                  *_task_table(earlier, SCIFACT_HEADER, _scifact_cells)]
    lines += ["## CLINC150 routing (test + oos_test)", "", *([f"Command: `{commands['clinc150']}`.", ""] if "clinc150" in commands else []),
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
    ap.add_argument("--only", default="", help=f"comma-separated systems: {', '.join(BY_NAME)} (default: {', '.join(s.name for s in SYSTEMS if s.default)})")
    ap.add_argument("--limit-docs", type=int, help="smoke: SciFact abstracts (the chosen queries' relevant ones first)")
    ap.add_argument("--limit-queries", type=int, help="smoke: SciFact test (and train, for tuning) queries")
    ap.add_argument("--limit", type=int, help="smoke: CLINC150 messages per split (3x for train), evenly spaced")
    ap.add_argument("--latency-n", type=int, default=1000, help="CLINC150 test messages timed one at a time")
    ap.add_argument("--threads", type=int, help="intra-op threads for torch and ONNX Runtime in every system (default: each library's own)")
    ap.add_argument("--cross-encoder", type=Path, help="a local cross-encoder folder: adds querywise-hybrid+rerank")
    ap.add_argument("--fine-tune", action="store_true", help="add querywise's router on router_clinc150's fine-tuned encoder")
    ap.add_argument("--no-ranx", action="store_true", help="skip the ranx cross-check of the SciFact metrics (numba compiles ~30 s)")
    ap.add_argument("--data", type=Path, default=datasets.CLINC150, help="CLINC150 data_full.json")
    ap.add_argument("--work", type=Path, help="children's outputs and querywise's index folders (default bench/work/peers)")
    ap.add_argument("--results", type=Path, help="where peers.json/peers.md go (default bench/results; /tmp for a smoke run)")
    ap.add_argument("--system", choices=list(BY_NAME), help=argparse.SUPPRESS)  # a child: one system
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # a SciFact child: build, then answer queries
    ap.add_argument("--index-dir", type=Path, help=argparse.SUPPRESS)  # a user-path child: the folder `querywise index` built
    ap.add_argument("--config", type=Path, help=argparse.SUPPRESS)  # and its TOML
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
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
    if args.serve:
        from bench.retrieval.peers_builders import serve

        serve(args)
        return
    if args.system:
        child(args)
        return
    command = " ".join([COMMAND, *sys.argv[1:]])
    t0 = time.time()
    systems = planned(args)
    scifact = [s for s in systems if s.task == "scifact"]
    results: dict[str, Any] = {"scifact": {}, "clinc150": {}}
    runs: dict[str, dict[str, list[str]]] = {}
    if scifact:
        rows, runs = run_scifact(args, scifact)
        results["scifact"] = {n: {**r, "config": row_config(BY_NAME[n], n, r)} for n, r in rows.items()}
    results["clinc150"] = run_clinc_children(args, [s for s in systems if s.task == "clinc150"])
    checks = metric_check(args, runs)
    commands = {task: command for task in ("scifact", "clinc150") if results[task]}
    earlier: dict[str, Any] = {}
    if (old := args.results / "peers.json").exists():
        # A task run here is replaced whole (its one run); a task not run keeps its rows and command,
        # and a SciFact row this run did not make stays apart, under its own date.
        before = json.loads(old.read_text(encoding="utf-8"))
        old_commands = before.get("commands", dict.fromkeys(("scifact", "clinc150"), before["machine"]["command"]))
        for task in ("scifact", "clinc150"):
            if not results[task]:
                results[task] = before.get(task, {})
                if task in old_commands:
                    commands[task] = old_commands[task]
        if scifact:
            earlier = {n: r for n, r in {**before.get("scifact_earlier", {}), **before.get("scifact", {})}.items()
                       if n not in results["scifact"]}
        else:
            earlier = before.get("scifact_earlier", {})
            checks = before.get("metric_check", {})
    data = {**results, "scifact_earlier": earlier, "must_show": must_show(results["scifact"]) if scifact else [],
            "commands": commands, "metric_check": checks, "followup": FOLLOWUP,
            "protocol": {"k": K, "rrf_k": RRF_K, "model_folder": str(model_folder()), "threads": args.threads or "each library's default",
                         "limits": {"docs": args.limit_docs, "queries": args.limit_queries, "clinc_per_split": args.limit},
                         "peer_packages": {s.name: version(s) for s in SYSTEMS if not missing_modules(s)},
                         "sentence-transformers": _version("sentence-transformers"), "torch": _version("torch")},
            "wall_s": round(time.time() - t0, 1)}
    log(f"wrote {write(args, data, command)}")


if __name__ == "__main__":
    main()
