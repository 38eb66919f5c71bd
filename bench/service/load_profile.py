"""Where the workers' time goes: py-spy on every worker during a run, and the plan profiled in
process (cProfile and each move's trace latency)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import log
from bench.service.load_measure import _proc_cpu
from bench.service.load_setup import CLOSERS, HERE, INDEX, MARKET, OPENERS

# --- py-spy on the workers (optional: skipped when py-spy is not installed) ------------------------

SPY_RULES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [  # (category, path parts, functions one of which the stack must hold, or ())
    ("embedding: batching and model call", ("querywise/embed/", "onnxruntime/", "tokenizers/"), ()),
    ("move: route (and several_intents)", ("querywise/understand/routing/route.py", "querywise/understand/routing/classifiers.py", "querywise/understand/intents.py",
                                           "querywise/understand/routing/calibration.py", "querywise/understand/routing/decision.py"), ()),
    ("move: follow_up", ("querywise/understand/followup/", "querywise/conversation.py"), ()),
    ("move: filters", ("querywise/understand/filters/", "querywise/checks/filters.py"), ()),
    ("move: spelling", ("querywise/understand/spelling/",), ()),
    ("move: exact_lookup", ("querywise/understand/exact.py",), ()),
    ("move: ambiguity", ("querywise/understand/ambiguity.py",), ()),
    ("understanding: pipeline, other", ("querywise/understand/",), ()),
    ("server: JWT verification", ("querywise/server/auth.py", "jwt/"), ()),
    ("server: rate limit", ("limits/",), ()),
    ("server: metrics", ("querywise/server/metrics.py", "prometheus_client/"), ()),
    ("logging: JSON lines (uvicorn access log)", ("logging/", "querywise/server/run.py"), ()),
    ("server: handler, body checks", ("querywise/server/",), ()),
    ("querywise: plan model, catalog, service", ("querywise/",), ()),
    ("FastAPI: response validation and JSON (serialize_response)", ("fastapi/",), ("serialize_response", "_prepare_response_content")),
    ("FastAPI: request body, dependencies, routing", ("fastapi/",), ()),
    ("Starlette: routing, middleware", ("starlette/",), ()),
    ("uvicorn: HTTP (httptools), uvloop", ("uvicorn/", "h11/", "httptools/", "uvloop/"), ()),
    ("thread hand-offs: anyio (Starlette's task groups, streams), the request threads", ("anyio/", "sniffio/", "concurrent/futures/"), ()),
    ("asyncio event loop", ("asyncio/", "selectors.py"), ()),
]  # fmt: skip


def _spy_category(stack: str) -> str:
    """The innermost frame of a stack that belongs to a known owner (pydantic, json, re, numpy and
    threading are no owners: their time goes to whoever called them)."""
    import re

    frames = [m.groups() for frame in stack.split(";") if (m := re.match(r"\s*(.*?) \((.*?):\d+\)\s*$", frame))]
    held = {func.rsplit(".", 1)[-1] for func, _ in frames}
    for _, path in reversed(frames):
        for name, parts, funcs in SPY_RULES:
            if any(part in path for part in parts) and (not funcs or held & set(funcs)):
                return name
    return "other (stdlib, threads)"


def _worker_pids(svc: dict[str, Any], workers: int) -> list[int]:
    if workers == 1:
        return [svc["pid"]]
    pids = []
    for pid, (ppid, _) in _proc_cpu().items():
        if ppid == svc["pid"]:
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"resource_tracker" not in cmd:
                    pids.append(pid)
    return pids


def _start_spies(svc: dict[str, Any], workers: int, name: str, duration_s: float) -> list[subprocess.Popen[bytes]]:
    """py-spy on each worker (--gil: the thread holding the GIL, the worker's bottleneck; 100 Hz,
    not pausing it), from the end of the ramp-up to a second before the end."""
    spy = Path(sys.executable).parent / "py-spy"
    cmd = [str(spy), "record", "--gil", "--nonblocking", "-r", "100", "-d", str(int(duration_s - 3)), "-f", "raw"]
    return [subprocess.Popen([*cmd, "-p", str(pid), "-o", str(HERE / f"py-spy-{name}-{pid}.txt")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for pid in _worker_pids(svc, workers)]


def _spy_report(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """Share of the GIL-held samples by category, and the functions most often on top."""
    counts: dict[str, int] = {}
    leaves: dict[str, int] = {}
    threads: dict[str, int] = {}
    total = 0
    for file in sorted(HERE.glob(f"py-spy-{name}-*.txt")):
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines():
            stack, _, n = line.rpartition(" ")
            if not n.isdigit():
                continue
            total += int(n)
            cat = _spy_category(stack)
            counts[cat] = counts.get(cat, 0) + int(n)
            leaf = stack.rsplit(";", 1)[-1].strip()
            leaves[leaf] = leaves.get(leaf, 0) + int(n)
            thread = ("thread pool (endpoint, sync dependencies, response validation)" if "WorkerThread.run" in stack
                      else "embedding batching thread" if "BatchingEmbedder._serve" in stack
                      else "event loop (HTTP, routing, middleware, body parsing, serialization)" if "run_forever" in stack
                      else "other (stacks py-spy read only in part)")
            threads[thread] = threads.get(thread, 0) + int(n)
    share = {k: round(v / total, 4) for k, v in sorted(counts.items(), key=lambda kv: -kv[1])} if total else {}
    cpu_ms = result["server_cpu_ms_per_request"]
    return {"samples": total, "share": share, "server_cpu_ms_per_request": cpu_ms,
            "threads": {k: round(v / total, 4) for k, v in sorted(threads.items(), key=lambda kv: -kv[1])} if total else {},
            "ms_per_request_if_cpu_follows_the_gil": {k: round(v * cpu_ms, 3) for k, v in share.items()},
            "top_leaf_functions": [{"function": k, "share": round(v / total, 4)} for k, v in sorted(leaves.items(), key=lambda kv: -kv[1])[:12]]}


# --- the in-process profile -----------------------------------------------------------------------


def _profile(pool: dict[str, Any]) -> dict[str, Any]:
    """Where a plan's time goes in one process, one request at a time: each move's trace latency and
    cProfile's totals, with the query-embedding LRU warm (hot) and with unique messages (cold)."""
    import cProfile
    import pstats

    import numpy as np

    from querywise.config import load_settings
    from querywise.demo import demo_file
    from querywise.index import Index
    from querywise.server.run import serving_embedder
    from querywise.server.schemas import PlanResponse
    from querywise.service import QueryWise

    settings = load_settings(demo_file("querywise.toml"))
    embedder = serving_embedder(settings)
    ix = Index.open(INDEX, settings=settings, embedder=embedder)
    qw = QueryWise(settings, ix, embedder=embedder)
    session = {"market": MARKET}
    items = [*pool["first"], *pool["follow_up"]]
    for it in items:  # lazy imports and the LRU
        qw.plan(it["message"], history=it["history"], session=session)
    out: dict[str, Any] = {"plans_per_pass": len(items)}
    unique_i = 0
    for phase in ("hot", "cold"):
        batch = []
        for rep in range(3 if phase == "hot" else 2):
            for it in items:
                message = it["message"]
                if phase == "cold":
                    unique_i += 1
                    message = f"{OPENERS[1 + unique_i % (len(OPENERS) - 1)]} {message} {CLOSERS[1 + (unique_i // 7 + rep) % (len(CLOSERS) - 1)]} #{unique_i}"
                batch.append((message, it["history"]))
        calls0, texts0 = embedder.calls, embedder.batched
        moves: dict[str, list[float]] = {}
        took, ser = [], []
        prof = cProfile.Profile()
        for message, history in batch:
            prof.enable()
            t = time.perf_counter()
            plan = qw.plan(message, history=history, session=session)
            took.append(time.perf_counter() - t)
            t = time.perf_counter()
            PlanResponse(plan=plan).model_dump_json()
            ser.append(time.perf_counter() - t)
            prof.disable()
            for step in plan.trace:
                moves.setdefault(step.move, []).append(step.latency_ms)
        stats = pstats.Stats(prof)
        raw_stats: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # (file, line, name) -> (cc, nc, tt, ct, callers)
        top = sorted(raw_stats.items(), key=lambda kv: kv[1][2], reverse=True)[:12]
        named = {}
        for (file, _, fn), (_, nc, _, ct, _) in raw_stats.items():
            for label, (f_part, name) in {"model call (onnxruntime InferenceSession.run)": ("onnxruntime", "run"),
                                           "BatchingEmbedder.embed (incl. waiting for its thread)": ("_batching.py", "embed"),
                                           "tokenizer": ("tokenizers", "encode_batch")}.items():  # fmt: skip
                if f_part in file and fn == name:
                    named[label] = {"calls": nc, "cumulative_ms_per_plan": round(ct / len(batch) * 1000, 3)}
        total_ms = float(np.mean(took)) * 1000
        out[phase] = {
            "plans": len(batch), "plan_ms": {"mean": round(total_ms, 3), "p50": round(float(np.percentile(took, 50)) * 1000, 3),
                                             "p95": round(float(np.percentile(took, 95)) * 1000, 3)},
            "response_json_ms_mean": round(float(np.mean(ser)) * 1000, 3),
            "moves_ms_mean_per_plan": {m: round(sum(v) / len(batch), 3) for m, v in sorted(moves.items(), key=lambda kv: -sum(kv[1]))},
            "embedding": {"model_calls": embedder.calls - calls0, "texts_embedded": embedder.batched - texts0,
                          "texts_per_plan": round((embedder.batched - texts0) / len(batch), 2), **named},
            "top_tottime": [{"function": f"{Path(file).name}:{line} {fn}", "calls": nc, "tottime_ms_per_plan": round(tt / len(batch) * 1000, 3)}
                            for (file, line, fn), (_, nc, tt, _, _) in top],
        }  # fmt: skip
        log(f"  profile {phase}: {out[phase]['plan_ms']} ms/plan, moves {out[phase]['moves_ms_mean_per_plan']}, "
            f"{out[phase]['embedding']['texts_per_plan']} texts embedded/plan")
    t_single: list[float] = []
    for it in items[:40]:  # one query through the model alone, no batching thread
        text = f"{it['message']} (single {len(t_single)})"
        t = time.perf_counter()
        embedder.inner.embed([text])
        t_single.append(time.perf_counter() - t)
    out["one_text_model_call_ms"] = {"p50": round(float(np.percentile(t_single, 50)) * 1000, 3), "mean": round(float(np.mean(t_single)) * 1000, 3)}
    qw.close()
    ix.close()
    embedder.close()
    return out
