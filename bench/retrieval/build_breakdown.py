"""Where a cold `querywise index` spends its time (#39): CPU seconds by phase, so others' load does not count.

    .venv/bin/python -m bench.retrieval.build_breakdown                       # SciFact, int8 then fp32
    .venv/bin/python -m bench.retrieval.build_breakdown --kinds onnx-int8+skiplayernorm,onnx-int8 --limit-docs 1000   # before/after, a sample

Each build is the README's command, `querywise index SOURCE --index DIR --skip-invalid` (one TOML
line for the embedder kind), in a fresh interpreter against an empty cache folder of its own, as
bench/retrieval/peers_cli.py runs it: the ONNX export (a child process), the quantization and
every vector are inside it. The child runs the command in-process (the CLI's typer app) with each
phase's function wrapped by a timer: wall seconds and the process's CPU seconds (every thread:
ONNX Runtime's intra-op threads included; a child process's — the export — counted apart), each
phase's own time with the phases it calls taken out. What no phase covers is "other" (writing
chunks.jsonl, the manifest, the progress bars). Interpreter start and the imports are counted
before the command runs. The embedder phases also count the tokens they run: useful (each text's,
after truncation at the model's window) and padded, and the model's useful GFLOP (machine_peak's
count), so the embedding's rate per CPU-second is comparable with bench/results/embed_efficiency.md.
The peers embed each abstract once, truncated at 256 tokens: their token count is reported beside
querywise's (the README path embeds chunks of at most 1,000 characters, each whole up to the window).

Writes bench/results/build_breakdown.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import ROOT, WORK, datasets, log
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.retrieval.build_breakdown"
KINDS = ("onnx-int8", "onnx")
# A kind with this suffix runs as main did before d0ae077: ONNX Runtime's SkipLayerNormalization
# fusion on (the embedder turns it off, `_onnx.UNFUSED`).
FUSED_SLN = "+skiplayernorm"


class _Clock:
    """Nested phase timers: each phase's own wall and CPU seconds (its callees' taken out).

    The build makes its embedder in a thread while the main thread analyses the corpus
    (`writing._EmbedderLoad`): a phase of another thread counts that thread's CPU
    (`time.thread_time`) and the children it waited for; a phase of the main thread counts the
    process's CPU less what other threads' phases spent meanwhile."""

    def __init__(self, began: float = 0.0) -> None:
        self.own: dict[str, dict[str, float]] = {}
        # Each phase's first start and last end (wall s from ``began``) and the thread it ran in: what
        # ran beside what before the model's first text (the critical path of a cold start).
        self.spans: dict[str, dict[str, float | str]] = {}
        self._began = began
        self._local = threading.local()  # per thread: per open phase, the inner phases' [wall, cpu, children, other threads' cpu]
        self._off_cpu = 0.0  # CPU of the outermost phases other threads have closed
        self._lock = threading.Lock()

    def now(self) -> tuple[float, float, float, float]:
        t = os.times()
        main = threading.current_thread() is threading.main_thread()
        return time.perf_counter(), (t.user + t.system) if main else time.thread_time(), t.children_user + t.children_system, self._off_cpu

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        stack: list[list[float]] = self._local.__dict__.setdefault("stack", [])
        main = threading.current_thread() is threading.main_thread()
        start = self.now()
        stack.append([0.0, 0.0, 0.0])
        try:
            yield
        finally:
            inner = stack.pop()
            end = self.now()
            spent = [b - a for a, b in zip(start[:3], end[:3], strict=True)]
            if main:
                spent[1] -= end[3] - start[3]  # the CPU other threads' phases spent meanwhile
            with self._lock:
                row = self.own.setdefault(name, {"wall_s": 0.0, "cpu_s": 0.0, "child_cpu_s": 0.0, "calls": 0})
                for key, total, nested in zip(("wall_s", "cpu_s", "child_cpu_s"), spent, inner, strict=True):
                    row[key] += total - nested
                row["calls"] += 1
                span = self.spans.setdefault(name, {"first_s": round(start[0] - self._began, 3), "thread": threading.current_thread().name})
                span["last_s"] = round(end[0] - self._began, 3)
                if not main and not stack:
                    self._off_cpu += spent[1]
            if stack:
                for i, total in enumerate(spent):
                    stack[-1][i] += total

    def wrap(self, owner: Any, attr: str, name: str, count: Callable[..., None] | None = None) -> None:
        """Time every call of ``owner.attr`` as phase ``name``; ``count(*args)`` sees its arguments."""
        original = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if count is not None:
                count(*args)
            with self.phase(name):
                return original(*args, **kwargs)

        setattr(owner, attr, timed)


def _child(kind: str, source: Path, index: Path, out: Path) -> None:
    """One build, timed by phase (runs in a fresh interpreter: `--child`)."""
    began, started = time.perf_counter(), os.times()
    start_cpu = started.user + started.system  # the interpreter's start and this module's imports
    clock = _Clock(began)
    with clock.phase("process start: interpreter and imports"):
        from querywise.cli import app
    import querywise.cli.index as cli_index
    import querywise.embed._onnx as onnx_mod
    import querywise.index.writing as writing
    from bench.retrieval.machine_peak import model_flops
    from querywise.embed._cache import CachedEmbedder
    from querywise.index.analysis import Analysis
    from querywise.index.engine import EdgeEngine
    from querywise.index.store import Index

    tokens = {"useful": 0, "padded": 0, "texts": 0, "useful_gflop": 0.0}
    if kind.endswith(FUSED_SLN):
        kind = kind.removesuffix(FUSED_SLN)
        init = onnx_mod.OnnxEmbedder.__init__

        def fused_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **{**kwargs, "unfused": ()})

        onnx_mod.OnnxEmbedder.__init__ = fused_init  # type: ignore[method-assign]

    counting = threading.Lock()  # int8 runs two batches at once: `+=` from two threads loses counts (170 tokens in one run)

    def count_batch(_self: Any, batch: Sequence[Any], *_: Any) -> None:  # (_run also takes the session)
        lengths = [len(e) for e in batch]
        with counting:
            _count(lengths)

    def _count(lengths: list[int]) -> None:
        tokens["useful"] += sum(lengths)
        tokens["padded"] += max(lengths) * len(lengths)
        tokens["texts"] += len(lengths)
        tokens["useful_gflop"] += model_flops(lengths) / 1e9

    clock.wrap(cli_index, "read_corpus", "read and chunk the corpus")
    clock.wrap(onnx_mod, "export_fp32_onnx", "ONNX export (its child's CPU apart)")
    clock.wrap(onnx_mod, "_quantize_in_child", "int8 quantization (its child's CPU apart)")
    if hasattr(onnx_mod, "_export_and_quantize_in_child"):  # a cold start's one child (not in code before cold-window)
        clock.wrap(onnx_mod, "_export_and_quantize_in_child", "ONNX export and int8 quantization, one child (its CPU apart)")
    clock.wrap(onnx_mod.OnnxEmbedder, "__init__", "embedder load: tokenizer, ONNX Runtime session")
    clock.wrap(writing, "analyse", "BM25 analysis")
    clock.wrap(Analysis, "vectors", "BM25 weights")
    clock.wrap(writing, "count_over_window", "token counts for the window report")
    clock.wrap(onnx_mod.OnnxEmbedder, "embed", "embedding: tokenizer and batching")
    clock.wrap(onnx_mod.OnnxEmbedder, "_run", "embedding: the model (padding, ONNX Runtime, pooling)", count_batch)
    timed_run = onnx_mod.OnnxEmbedder._run
    span = {"first": float("inf"), "last": 0.0}

    def spanned(self: Any, *args: Any, **kwargs: Any) -> Any:  # when the model ran first and last
        begun = time.perf_counter() - began
        try:
            return timed_run(self, *args, **kwargs)
        finally:
            with counting:
                span["first"], span["last"] = min(span["first"], begun), max(span["last"], time.perf_counter() - began)

    onnx_mod.OnnxEmbedder._run = spanned  # type: ignore[method-assign]
    clock.wrap(CachedEmbedder, "_lookup", "embedding cache: look-ups")
    clock.wrap(CachedEmbedder, "_store", "embedding cache: writes")
    clock.wrap(writing, "check_vectors", "vector checks")
    clock.wrap(EdgeEngine, "upsert", "Qdrant upserts")
    clock.wrap(EdgeEngine, "finish", "Qdrant: HNSW graph and segment")
    clock.wrap(EdgeEngine, "open", "Qdrant: open (the build's check, the index returned)")
    clock.wrap(writing, "seal", "seal: file digests")
    clock.wrap(Index, "open", "open the new build")
    with clock.phase("other (chunks.jsonl, manifest, progress)"):
        code = app(["index", str(source), "--index", str(index), "-c", str(_toml(kind, index.parent)), "--skip-invalid"], standalone_mode=False)
    if code:  # without standalone mode a failed command returns its exit code: a build cut short is no measure
        raise SystemExit(f"querywise index exited with {code}")
    timeline: dict[str, Any] = {"model_first_s": round(span["first"], 3), "model_last_s": round(span["last"], 3), "end_s": round(time.perf_counter() - began, 3)}
    timeline["spans"] = clock.spans
    out.write_text(json.dumps({"phases": clock.own, "tokens": tokens, "start_cpu_s": round(start_cpu, 3), "timeline": timeline}), encoding="utf-8")


def _toml(kind: str, folder: Path) -> Path:
    path = folder / "querywise.toml"
    path.write_text(f'[embedding]\nkind = "{kind}"\n', encoding="utf-8")
    return path


def build(kind: str, source: Path, work: Path, src: Path = ROOT / "src") -> dict[str, Any]:
    """One cold build of ``source`` with embedder ``kind``, in a child running querywise from
    ``src`` (another worktree's: a before/after): its phases, timeline and totals."""
    folder = work / kind
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    out = folder / "phases.json"
    env = {**os.environ, "QUERYWISE_CACHE_DIR": str(folder / "cache"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
    load = [round(os.getloadavg()[0], 2)]
    started, cpu_before = time.perf_counter(), _children_cpu_s()
    proc = subprocess.Popen([sys.executable, "-m", "bench.retrieval.build_breakdown", "--child", kind, str(source),
                             str(folder / "index"), str(out)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, stderr = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"the build of {kind} failed: {stderr[-2000:]}")
    load.append(round(os.getloadavg()[0], 2))
    data = json.loads(out.read_text(encoding="utf-8"))
    usage = round(_children_cpu_s() - cpu_before, 2)
    phases = {name: {k: round(v, 3) for k, v in row.items()} for name, row in data["phases"].items()}
    start = phases.setdefault("process start: interpreter and imports", {"wall_s": 0.0, "cpu_s": 0.0, "child_cpu_s": 0.0, "calls": 1})
    start["cpu_s"] = round(start["cpu_s"] + data["start_cpu_s"], 3)  # before the child's first line ran, too
    return {"kind": kind, "wall_s": round(wall, 2), "cpu_s": usage, "load_avg_1min": load, "phases": phases, "tokens": data["tokens"],
            "timeline": data["timeline"], "src": _commit_of(src)}


def _commit_of(src: Path) -> str:
    """The commit (and "+changes" when the tree differs from it) of the worktree holding ``src``."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, check=False).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain", "--", ".") else "")


def _children_cpu_s() -> float:
    """CPU seconds of every child process that has ended and been waited for (and theirs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def peer_tokens(source: Path, limit: int | None) -> dict[str, int]:
    """Tokens the peers embed (one text per abstract: title, newline, text; truncated at the window)
    against the README path's chunks, useful tokens only."""
    from querywise.chunking import Chunker
    from querywise.config import Settings
    from querywise.corpus import read_corpus
    from querywise.embed._base import max_seq_length, model_dir, token_counter

    folder = model_dir()
    window, count = max_seq_length(folder), token_counter(folder)
    records = [r for _, r in zip(range(limit or 10**9), datasets.scifact_records(), strict=False)]
    abstracts = [f"{r['title']}\n{r['text']}".strip() for r in records]
    c = Settings().chunking
    chunks = read_corpus(source, chunker=Chunker(max_chars=c.max_chars, overlap=c.overlap, identifier_pattern=c.identifier_pattern),
                         skip_invalid=True).chunks
    from querywise.index.points import SearchTexts

    texts = list(SearchTexts(chunks))
    return {"peer_texts": len(abstracts), "peer_tokens": sum(min(n, window) for n in count(abstracts)),
            "querywise_texts": len(texts), "querywise_tokens": sum(min(n, window) for n in count(texts))}


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = ["## Where a cold build's time goes (`bench/retrieval/build_breakdown.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}). `querywise index` on {result['source']} "
             "(README path, `--skip-invalid`), each in a fresh interpreter with an empty cache folder: CPU seconds by phase "
             "(every thread of the process; the export's child apart), each phase without the phases it calls. "
             "Wall seconds are the share of 2 shared cores the build got: read them with the load.", ""]
    t = result["peer_tokens"]
    lines += [f"Tokens embedded (useful, truncated at 256): the peers {t['peer_tokens']:,} ({t['peer_texts']:,} abstracts), "
              f"querywise {t['querywise_tokens']:,} ({t['querywise_texts']:,} chunks), {t['querywise_tokens'] / t['peer_tokens']:.2f}x.", ""]
    for b in result["builds"]:
        tok = b["tokens"]
        model = next((r for n, r in b["phases"].items() if n.startswith("embedding: the model")), None)
        rate = f"{tok['useful_gflop'] / model['cpu_s']:.1f}" if model and model["cpu_s"] else "-"
        kind = b["kind"].removesuffix(FUSED_SLN) + ("\"` with SkipLayerNormalization fused (before d0ae077)" if b["kind"].endswith(FUSED_SLN) else "\"`")
        lines += [f"### `[embedding] kind = \"{kind}: {b['wall_s']} s wall, {b['cpu_s']} CPU s (process tree), "
                  f"1-minute load {b['load_avg_1min'][0]} before, {b['load_avg_1min'][1]} after", "",
                  f"Tokens run: {tok['useful']:,} useful of {tok['padded']:,} padded ({1 - tok['useful'] / max(tok['padded'], 1):.1%} padding) in "
                  f"{tok['texts']:,} texts; {tok['useful_gflop']:,.0f} useful GFLOP, **{rate} per CPU-second of the model phase**.", "",
                  *_timeline(b),
                  "| phase | CPU s | share of CPU | child CPU s | wall s | calls |", "|---|---|---|---|---|---|"]
        total = sum(r["cpu_s"] + r["child_cpu_s"] for r in b["phases"].values()) or 1.0
        for name, r in sorted(b["phases"].items(), key=lambda kv: -(kv[1]["cpu_s"] + kv[1]["child_cpu_s"])):
            lines.append(f"| {name} | {r['cpu_s']:.1f} | {(r['cpu_s'] + r['child_cpu_s']) / total:.1%} | {r['child_cpu_s']:.1f} | "
                         f"{r['wall_s']:.1f} | {int(r['calls'])} |")
        lines.append("")
    return "\n".join(lines)


def _timeline(b: dict[str, Any]) -> list[str]:
    """When the model ran, from the command's start (the interpreter's start is before it): what
    runs before its first text and after its last runs beside no model."""
    t = b.get("timeline")
    if not t:
        return []
    return [f"Querywise {b.get('src', '?')}. Timeline from the command's first line (wall s): the model's first text at "
            f"{t['model_first_s']:.1f}, its last done at {t['model_last_s']:.1f}, the command done at {t['end_s']:.1f}: "
            f"**{t['model_first_s'] + t['end_s'] - t['model_last_s']:.1f} s with no model running** (before + after), "
            f"{t['model_last_s'] - t['model_first_s']:.1f} s between.", "", *_before_first_text(t)]


def _before_first_text(t: dict[str, Any]) -> list[str]:
    """The phases that began before the model's first text: when each began and last ended, in which
    thread (the export and quantization run in their own, beside the main thread's analysis)."""
    spans = sorted((s["first_s"], s["last_s"], s["thread"], name) for name, s in t.get("spans", {}).items() if s["first_s"] < t["model_first_s"])
    if not spans:
        return []
    return ["Before the first text (wall s from the command's first line; a phase called more than once: its first start, last end): "
            + "; ".join(f"{name} {a:.1f}-{b:.1f} ({thread})" for a, b, thread, name in spans) + ".", ""]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--child":
        kind, *paths = args[1:]
        _child(kind, *(Path(p) for p in paths))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"embedder kinds, built in this order ({FUSED_SLN} after one: that fusion on)")
    ap.add_argument("--limit-docs", type=int, default=0, help="only the first N abstracts")
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the querywise source folder to build with (default this "
                    "worktree's; a before/after: another worktree's src, e.g. main's in a detached worktree)")
    ap.add_argument("--out", default="build_breakdown", help="result name in bench/results (a before/after's runs apart)")
    opts = ap.parse_args(args)
    source = datasets.SCIFACT
    work = WORK / "build_breakdown"
    if opts.limit_docs:
        from bench.retrieval.peers_cli import beir_subset

        ids = {str(r["_id"]) for _, r in zip(range(opts.limit_docs), datasets.scifact_records(), strict=False)}
        source = beir_subset(source, Path(tempfile.gettempdir()) / "querywise-breakdown-subset", ids, set())
        work = Path(tempfile.gettempdir()) / "querywise-breakdown"
    builds = []
    for kind in opts.kinds.split(","):
        log(f"cold build with {kind}")
        builds.append(build(kind, source, work, opts.src.resolve()))
    result = {"source": f"SciFact ({opts.limit_docs or 'all'} abstracts)", "builds": builds,
              "peer_tokens": peer_tokens(source, opts.limit_docs or None)}
    command = COMMAND + (f" --kinds {opts.kinds}" if opts.kinds != ",".join(KINDS) else "") + (f" --limit-docs {opts.limit_docs}" if opts.limit_docs else "")
    command += (f" --src {opts.src}" if opts.src.resolve() != (ROOT / "src").resolve() else "") + (f" --out {opts.out}" if opts.out != "build_breakdown" else "")
    publish(opts.out, result, command=command, render=markdown)
    log(f"wrote {opts.out}.json and .md")


if __name__ == "__main__":
    main()
