"""Every benchmark of the suite: its module, its arguments for the full and the quick run, the
minutes it takes on the reference machine (2 cores, embeddings cached), and what it needs.

`bench.run` runs them in this order; `tests/bench/test_suite.py` imports each and runs the ones
with `smoke` arguments on tiny inputs. Adding a benchmark = one module under bench/<concern>/ and
one entry here.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass


@dataclass(frozen=True)
class Benchmark:
    """One benchmark. `name` is its module under bench/ ("retrieval.scale"); `aliases` are other
    names `bench.run NAME` and `--skip` accept (its file name, the name it had before)."""

    name: str
    what: str
    minutes: float  # the full run, on 2 cores with embeddings and indexes cached (bench/work)
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] | None = None  # the quick suite's arguments; None: not in the quick suite
    quick_minutes: float = 0.0  # the quick run, measured alike (a first run embeds and builds: minutes more)
    results: tuple[str, ...] = ()  # the result files it writes in bench/results (stems)
    needs: tuple[str, ...] = ()  # importable modules it needs beyond the project's own (else skipped)
    install: str = ""  # how to get them
    records_command: bool = False  # takes --command: its JSON records the suite's command line
    smoke: tuple[str, ...] | None = None  # arguments for a run on tiny inputs (tests/bench); None: import only
    loads_model: bool = False  # the smoke run loads the embedding model (a `model` test)
    aliases: tuple[str, ...] = ()

    @property
    def module(self) -> str:
        return f"bench.{self.name}"

    def missing(self) -> list[str]:
        """The modules in `needs` that do not import here."""
        return [m for m in self.needs if _absent(m)]

    def matches(self, name: str) -> bool:
        """`name` is this benchmark's module under bench/, an alias, or its file name when that is
        not another benchmark's alias ("adversarial" was crafted_inputs' name before the split)."""
        if name in (self.name, *self.aliases):
            return True
        return name == self.name.rsplit(".", 1)[-1] and not any(name in b.aliases for b in BENCHMARKS)


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


PEERS_INSTALL = ("pip install -c requirements.lock -r bench/requirements-peers.txt, "
                 "then pip install --no-deps -r bench/requirements-peers-nodeps.txt")

BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("retrieval.scale", "index build, search latency and HNSW recall on synthetic chunks", 60,
              ("--sizes", "10000,100000,400000", "--tune-size", "100000"),
              quick=("--sizes", "10000", "--tune-size", "0", "--results-name", "scale-quick.json"), quick_minutes=1,
              results=("scale", "scale-quick"), records_command=True, aliases=("scale",)),
    # The full run is the 400,000 chunks (#38): two full builds of 400k, 80 minutes on 2 shared cores at load ~20.
    Benchmark("retrieval.live_index", "a live update of 1% of an index against a full build: time, searches during it, rankings", 40,
              ("--size", "400000"), quick=("--size", "20000", "--results-name", "live_index-quick.json"), quick_minutes=2,
              results=("live_index", "live_index-quick"), records_command=True, aliases=("live_index",)),
    Benchmark("retrieval.bm25_engines", "three BM25 engines and the library's dense and hybrid on SciFact, speed at size", 10,
              ("--synth-size", "100000"), quick=("--synth-size", "10000", "--results-name", "bm25_engines-quick.json"),
              quick_minutes=1, results=("bm25_engines", "bm25_engines-quick"), records_command=True, aliases=("bm25",)),
    Benchmark("retrieval.embed_throughput", "embedding throughput of the torch, ONNX and int8 paths", 5,
              quick=("--repeats", "1"), quick_minutes=3, results=("embed_throughput",), aliases=("embed",)),
    Benchmark("retrieval.embed_efficiency", "the embedder per CPU-second against ONNX Runtime's own products at the model's shapes", 3,
              results=("embed_efficiency",)),
    Benchmark("retrieval.embed_options", "fp32 embedding per CPU-second under session options, IOBinding, batch caps, bias folded into Gemm", 8,
              results=("embed_options",)),
    Benchmark("retrieval.cold_start", "peak RSS of a first build (ONNX export) against a warm one", 3,
              results=("cold_start",)),
    Benchmark("retrieval.build_breakdown", "a cold `querywise index` of SciFact (int8, fp32) by phase, in CPU seconds", 10,
              results=("build_breakdown",)),
    Benchmark("retrieval.int8_fusion", "int8 with ONNX Runtime's SkipLayerNormalization fusion on and off: SciFact nDCG@10, cosine", 25,
              results=("int8_fusion",)),
    Benchmark("retrieval.int8", "the int8 embedder against fp32: quantizer options on SciFact, every collection, CLINC150 routing", 40,
              quick=("--quick",), quick_minutes=2, results=("int8", "int8-quick")),
    Benchmark("retrieval.int8_rank", "int8 recipes (MatMuls kept in fp32) ranked by agreement with fp32 and speed on samples", 8,
              results=("int8-rank",)),
    Benchmark("retrieval.int8_smooth", "int8 with outlier activation channels moved into the weights: agreement with fp32 and speed, SciFact train side", 15,
              results=("int8-smooth",)),
    Benchmark("retrieval.int8_profile", "the int8 embedder's kernel time by operator (each text alone, one thread), as quantized and as run", 3,
              results=("int8_profile",)),
    Benchmark("retrieval.int8_ffn", "the split feed-forward's outlier channels computed apart against the shipped mask and Gather: cost, vectors", 3,
              results=("int8_ffn",)),
    Benchmark("retrieval.int8_attention", "the int8 graph's attention rewritten with ONNX Runtime's attention kernels: same vectors? CPU in turns", 6,
              results=("int8_attention", "int8_attention-abstracts0")),
    Benchmark("retrieval.int8_qkv", "the int8 products that share an input (Q, K, V; W1's two halves) as one product and a Split: same vectors? CPU in turns", 3,
              ("--skip", "3000", "--medline-skip", "900"), results=("int8_qkv", "int8_qkv-abstracts0")),
    Benchmark("retrieval.int8_split", "int8 with outlier activation channels split off into fp32 MatMuls: agreement with fp32 and speed, SciFact train side", 20,
              results=("int8-split",)),
    Benchmark("retrieval.int8_batch", "whether an int8 vector depends on its batch, static quantization, fp32 queries on an int8 corpus", 12,
              results=("int8-batch",)),
    Benchmark("understanding.plan_latency", "routing and planning latency without an LLM", 1, ("--n", "1000"),
              quick=("--n", "1000"), quick_minutes=1, results=("latency",), smoke=("--n", "20"), loads_model=True, aliases=("latency",)),
    Benchmark("understanding.crafted_inputs", "bounded time per move on crafted 1-100 KB messages", 3, ("--repeats", "3"),
              quick=("--repeats", "1"), quick_minutes=1, results=("adversarial",), aliases=("adversarial",)),
    Benchmark("understanding.access_attack", "generated attacks on access with a hostile LLM: no widening, no fail-open", 3,
              ("--n", "10000"), quick=("--n", "2000"), quick_minutes=0.5, results=("access_attack",),
              smoke=("--n", "30"), loads_model=True, aliases=("access",)),
    Benchmark("understanding.followup_gate", "the follow-up gate, rewrite guard and standalone forms on TREC CAsT 2019 and 2020 rewrites, written QA dialogues and held-out passage conversations", 1,
              quick=(), quick_minutes=0.2, results=("rewrite_cast2019", "rewrite_cast2020", "rewrite_dialogues", "rewrite_passages", "rewrite_passages_dev", "rewrite_passages_2"), smoke=(), aliases=("rewrite", "rewrite_cast2019")),
    Benchmark("understanding.followup_training", "added terms of the follow-up forms on the training and development conversation files (what rules are chosen on), rules alone, the default and the subject + message baseline", 3,
              results=("followup_training", "followup_first_read", "followup_first_read_2", "followup_first_read_3", "followup_first_read_4", "followup_first_read_5", "followup_first_read_6", "followup_first_read_7", "followup_first_read_8", "followup_first_read_9", "followup_first_read_10", "followup_first_read_11", "followup_first_read_12")),
    Benchmark("understanding.subject_openings", "the conversation's subject read from the opening turns of the training conversations, against hand labels", 0.1,
              quick=(), quick_minutes=0.05, results=("subject_openings",), smoke=()),
    Benchmark("routing.clinc150", "route classifiers and calibration on CLINC150 (in-scope accuracy, OOS recall)", 12,
              results=("router_clinc150",), needs=("sklearn",), aliases=("router", "router_clinc150")),
    Benchmark("triage.failures", "failure triage on SciFact, Medline and doc2dial, and its speed on 60 failures", 10,
              quick=("--quick",), quick_minutes=0.5, results=("triage_scifact", "triage_doc2dial", "triage_quick"),
              aliases=("triage",)),
    Benchmark("retrieval.evaluation", "the evaluation harness on doc2dial (ablation of the moves) and SciFact", 15,
              quick=("--quick",), quick_minutes=0.5, results=("evaluation", "evaluation-quick")),
    Benchmark("understanding.llm_latency", "latency the LLM tier adds, real SDK clients on a fake provider", 3,
              quick=("--quick",), quick_minutes=1.5, results=("llm_latency", "llm_latency-quick")),
    Benchmark("understanding.third_party", "the someone-else's-account rule: misses and false flags", 0.2,
              quick=(), quick_minutes=0.05, results=("third_party",), smoke=()),
    Benchmark("understanding.intents", "several intents split on the demo's held-out labels", 1,
              quick=(), quick_minutes=0.1, results=("intents",)),
    Benchmark("understanding.filters_fields", "filters per field on a labelled set over the demo catalog; zero results and access with and without the move", 2,
              quick=(), quick_minutes=1, results=("filters_fields",), smoke=("--no-retrieval",), aliases=("filters",)),
    Benchmark("understanding.defaults_gate", "the default deployment against pass-through per collection and slice (the gate)", 15,
              quick=("--quick",), quick_minutes=1, results=("defaults_gate", "defaults_gate-quick"), records_command=True),
    Benchmark("understanding.tune_moves", "tune --moves chosen on one set, reported on another", 10,
              quick=("--quick",), quick_minutes=1, results=("tune_moves", "tune_moves-quick"), records_command=True),
    Benchmark("understanding.followup_recall", "doc2dial follow-ups and changes of subject, the demo conversation", 8,
              results=("conversations",), aliases=("conversations",)),
    Benchmark("understanding.choice_doc2dial", "the learnt choice's threshold and cap (the sweep's best) and the choice off on doc2dial's train documents (reads followup_recall's index)", 9,
              results=("choice_doc2dial",)),
    Benchmark("understanding.answer_signal", "an execution-time signal for a change of subject after an answer (reads followup_recall's index)", 6,
              results=("answer_signal",)),
    Benchmark("understanding.drift_cost", "the CPU time the answer query's drift guard adds to execute (reads followup_recall's index)", 2,
              results=("drift_cost",)),
    Benchmark("understanding.subject_probe", "what carries a change of subject's loss, and the follow-up / change-of-subject trade-off curve (reads followup_recall's index)", 8,
              results=("subject_probe",)),
    Benchmark("understanding.drift_probe", "the answer query's drift guard: dense and BM25 guard families cross-validated within doc2dial train, reported on val and test (reads subject_probe's searches)", 6,
              results=("drift_probe",)),
    Benchmark("triage.first_contact", "index, eval --failures and triage as a user runs them, on two collections", 15,
              results=("first_contact_faq", "first_contact_scifact")),
    Benchmark("retrieval.fusion", "fusion tuned on train, reported on test (reads first_contact's indexes)", 5,
              results=("fusion",)),
    Benchmark("retrieval.feedback", "pseudo-relevance feedback for BM25 (tune --feedback) chosen on dev, reported on test: SciFact, doc2dial, Medline", 10,
              results=("feedback",)),
    Benchmark("triage.remote_retriever", "triage through a retriever served over HTTP (reads first_contact's index)", 3,
              results=("triage_retriever",), aliases=("triage_retriever",)),
    Benchmark("retrieval.peers", "LlamaIndex, LangChain (and Haystack when installed) beside querywise as its README runs it, on SciFact", 30,
              results=("peers",), needs=("llama_index.retrievers.bm25", "langchain_community"),
              install=PEERS_INSTALL),
    Benchmark("retrieval.query_latency", "where a search's time goes: SciFact through Index.search, stage by stage, session options, before/after", 2,
              results=("query_latency", "query_latency_cpu", "query_latency_cpu_int8", "query_latency_cpu_main", "query_latency_cpu_int8_main")),
    Benchmark("retrieval.query_cold", "a search right after torch peers' calls in another process (caches evicted, threads parked) against back to back, phase by phase; ONNX session options", 12,
              results=("query_cold", "query_cold_numpy", "query_cold_before", "query_cold_numpy_before"), needs=("sentence_transformers",), install="pip install 'querywise[torch]'"),
    Benchmark("retrieval.query_gap", "a search interleaved with others against alone (sleep, a busy core, evicted caches, the peers' pipe); the query embedding's floor by length", 6,
              results=("query_gap",)),
    Benchmark("retrieval.interference", "a search right after a torch model's call, same process or another: why interleaving slowed it", 5,
              results=("interference",), needs=("sentence_transformers",), install="pip install 'querywise[torch]'"),
    Benchmark("retrieval.rerank", "the cross-encoder reranker's latency and cost", 2, quick=(), quick_minutes=0.5, results=("rerank",)),
    Benchmark("service.embed_batching", "embeddings under concurrency, batched and not", 2, quick=(), quick_minutes=1, results=("embed_batching",),
              aliases=("embed_batching",)),
    Benchmark("service.load", "the HTTP service under a locust load profile", 10, quick=(), quick_minutes=10, results=("service_load",),
              needs=("locust",), install="pip install 'querywise[bench]'", aliases=("service_load",)),
    Benchmark("service.adversarial", "hostile requests against the HTTP service", 5, quick=(), quick_minutes=0.5, results=("service_adversarial",),
              aliases=("service_adversarial",)),
    Benchmark("service.faults", "injected faults (LLM, index rebuilds) under requests", 5, quick=(), quick_minutes=1, results=("service_faults",),
              aliases=("service_faults",)),
)


def find(name: str) -> Benchmark:
    """The benchmark `name` designates (its module under bench/, file name or alias)."""
    for b in BENCHMARKS:
        if b.matches(name):
            return b
    raise KeyError(f"no benchmark {name!r}; known: {', '.join(b.name for b in BENCHMARKS)}")
