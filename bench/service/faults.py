"""The service under faults (issue #17): the LLM provider hanging, slow past the deadline,
answering HTTP 500, malformed JSON or output outside the schema, and the index folder rebuilt
while requests run. No 5xx may come out, and every fallback must be counted in `/metrics`.

    .venv/bin/python -m bench.service.faults [--quick]

Three processes on 127.0.0.1: the fake OpenAI-compatible provider (`querywise.llm.fake_server`,
its mode switched through shared memory), the service (`querywise.server.run.build_app`, as
`querywise serve` builds it: the demo deployment, the real embedding model behind the batching
embedder, JWT auth, served by uvicorn) and this driver (the client threads and the rebuilds).
The deployment is the bundled demo (`demo_file("querywise.toml")`, `demo_corpus()`, index in
bench/work/service-faults/) with `[llm] provider = "openai"` pointed at the fake (the real OpenAI
SDK client, made from the settings) and the `llm_rewrite` move on, so the demo's follow-ups
(rewrites.jsonl, with their history) call it.

Per fault mode: N requests (alternately /v1/plan and /v1/ask) from 8 threads; the statuses; the
fallbacks `/metrics` counted (`querywise_llm_fallbacks_total{reason}`, scraped before and after)
against the fallbacks the responses' traces show; the client-side latency. Then a stream of
requests for a while during which the index folder is rebuilt a few times (each rebuild adds a
notice chunk): the statuses, and which build the service served (the one it opened: the notice
never appears, though a fresh `Index.open` of the folder finds it; a restarted service does).
Then issue #37's families (`faults_hostile.py`: a trickling or deep-JSON HTTP retriever, regexes
at load, JWT key confusion, half-sent request heads, slow bodies, a failed-auth storm, job polls
across two workers), each with what it tried and how often the service failed.
Writes bench/results/service_faults.json and .md (`--quick`: bench/work/service-faults/).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import RESULTS, WORK, log, percentiles
from bench.report import load_line, publish
from bench.service.faults_hostile import markdown as hostile_markdown
from bench.service.faults_hostile import run_families

COMMAND = ".venv/bin/python -m bench.service.faults"
HERE = WORK / "service-faults"
INDEX = HERE / "index"
KEY_ENV, SECRET_ENV = "QW_BENCH_FAULTS_OPENAI_KEY", "QUERYWISE_JWT_SECRET"
SECRET = "bench-service-faults-secret-at-least-32-bytes"
DEADLINE_S = 0.5  # [llm] timeout_s: the message's LLM deadline
HANG_S = 2.0  # the fake's hang (fault "timeout")
SLOW_TTFT_S = 1.0  # "slow": a good answer whose first token comes after the deadline
THREADS = 8
BODY_TIMEOUT_S = 5.0  # [server] request_body_timeout_s: shorter than the default 60 s, so the slow-body family runs in seconds
SESSION_MARKET = "eu"
NOTICE = "Store notice: Tessel gift vouchers bought in the spring sale never expire and work in every market."
NOTICE_QUERY = "gift vouchers spring sale never expire"


@dataclass(frozen=True)
class Mode:
    does: str  # what the fake provider does, for the report
    reply: Callable[[dict[str, Any]], Any]  # the good output -> the fake's Reply
    ttft_s: float = 0.0
    reason: str | None = None  # the fallback reason expected in every LLM move's trace


def _modes() -> dict[str, Mode]:
    from querywise.llm.fake_server import Reply

    return {
        "ok": Mode("answers at once with the rewrite", lambda good: Reply(output=good)),
        "hang": Mode(f"hangs {HANG_S:g} s (fault timeout)", lambda good: Reply(output=good, fault="timeout"), reason="timeout"),
        "slow": Mode(f"a good answer after {SLOW_TTFT_S:g} s", lambda good: Reply(output=good), ttft_s=SLOW_TTFT_S, reason="timeout"),
        "500": Mode("HTTP 500 (retried once, retry-after-ms: 1)", lambda good: Reply(fault="500"), reason="server_error"),
        "malformed_json": Mode("its JSON cut in half", lambda good: Reply(output=good, fault="malformed_json"), reason="malformed_json"),
        "out_of_schema": Mode("an extra field the schema forbids", lambda good: Reply(output={**good, "confidence": 0.93}), reason="schema_violation"),
    }  # fmt: skip


MODE_NAMES = ["ok", "hang", "slow", "500", "malformed_json", "out_of_schema"]


def _follow_ups() -> list[tuple[list[str], str, str]]:
    """(history, message, standalone) of the demo's rewrite set: follow-ups the LLM rewrites."""
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    return [(rec["history"], rec["message"], rec["standalone"]) for _, rec in read_jsonl(demo_file("rewrites.jsonl"))]


def _settings(fake_url: str) -> Any:
    from querywise.config import LLMSettings, ServerSettings, UnderstandingSettings, load_settings
    from querywise.demo import demo_file

    s = load_settings(demo_file("querywise.toml"))
    return s.model_copy(update={
        "cache_dir": HERE / "cache",
        "understanding": UnderstandingSettings(moves=[*s.understanding.moves, "llm_rewrite"]),
        "llm": LLMSettings(provider="openai", base_url=fake_url + "/v1", api_key_env=KEY_ENV, model="gpt-fake", timeout_s=DEADLINE_S),
        "server": ServerSettings(rate_limit=None, request_body_timeout_s=BODY_TIMEOUT_S),
    })  # fmt: skip


# --- the fake provider's process ---------------------------------------------------------------


def _fake_main(urls: Any, stop: Any, mode: Any, served: Any) -> None:
    from querywise.llm.fake_server import FakeLLMServer

    modes = _modes()
    standalones = {m: s for _, m, s in _follow_ups()}

    def respond(api: str, body: dict[str, Any]) -> Any:
        with served.get_lock():
            served.value += 1
        content = str(body.get("messages", [{}])[-1].get("content", ""))
        message = content.split("Message: ", 1)[-1].split("\n\n", 1)[0]
        return modes[MODE_NAMES[mode.value]].reply({"standalone": standalones.get(message)})

    with FakeLLMServer(hang_s=HANG_S) as fake:
        fake.respond_with(respond)
        urls.put(fake.url)
        while not stop.wait(0.005):
            fake.state.ttft_s = modes[MODE_NAMES[mode.value]].ttft_s


@contextlib.contextmanager
def _fake_provider() -> Iterator[tuple[str, Any, Any]]:
    """The fake provider in its own process (its threads would share this one's GIL): (url, mode, served)."""
    ctx = mp.get_context("spawn")
    urls, stop, mode, served = ctx.Queue(), ctx.Event(), ctx.Value("i", 0), ctx.Value("i", 0)
    process = ctx.Process(target=_fake_main, args=(urls, stop, mode, served), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=60), mode, served
    finally:
        stop.set()
        process.join(timeout=10)
        if process.is_alive():
            process.terminate()


# --- the service's process ---------------------------------------------------------------------


def _serve_main(fake_url: str, index: str, out: Any) -> None:
    import uvicorn

    from querywise.server.run import build_app

    started = time.perf_counter()
    app = build_app(_settings(fake_url), Path(index))
    ix = app.state.served.deployment.index
    from querywise.server.protocol import head_deadline

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", timeout_graceful_shutdown=10,
                                           http=head_deadline(app.state.request_head_timeout_s)))

    def report() -> None:
        while not server.started:
            time.sleep(0.02)
        out.put({"port": server.servers[0].sockets[0].getsockname()[1], "build_id": ix.manifest.build_id, "build": str(ix.build),
                 "load_s": round(time.perf_counter() - started, 2)})

    threading.Thread(target=report, daemon=True).start()
    server.run()  # SIGTERM: uvicorn drains and returns


@contextlib.contextmanager
def _service(fake_url: str) -> Iterator[dict[str, Any]]:
    """`querywise serve`'s app in its own process: {"url", "build_id", "build", "load_s"}."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    process = ctx.Process(target=_serve_main, args=(fake_url, str(INDEX), out))
    process.start()
    try:
        info = out.get(timeout=180)
        info["url"] = f"http://127.0.0.1:{info['port']}"
        yield info
    finally:
        process.terminate()  # SIGTERM: a graceful shutdown
        process.join(timeout=30)
        if process.is_alive():
            process.kill()
            process.join()


# --- the client side -------------------------------------------------------------------------


def _token() -> str:
    import jwt

    return jwt.encode({"sub": "bench", "market": SESSION_MARKET, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")


def _scrape(client: Any, url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = client.get(f"{url}/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(text) for s in fam.samples}


def _delta(after: dict[Any, float], before: dict[Any, float], name: str, label: str | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    for (n, labels), v in after.items():
        d = v - before.get((n, labels), 0.0)
        if n == name and d:
            out[",".join(f"{k}={x}" for k, x in labels) if label is None else dict(labels)[label]] = d
    return out


def _post(client: Any, url: str, path: str, body: dict[str, Any]) -> tuple[int, Any, str, float]:
    """(status, parsed JSON or None, text, seconds) of one request; a transport error is status 0."""
    started = time.perf_counter()
    try:
        r = client.post(f"{url}{path}", json=body)
    except Exception as exc:  # the service dropped the connection: a finding, reported
        return 0, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - started
    took = time.perf_counter() - started
    try:
        data = r.json()
    except ValueError:
        data = None
    return r.status_code, data, r.text, took


def _well_formed(path: str, data: Any) -> str | None:
    """None when `data` is the route's response body, else why not."""
    from pydantic import BaseModel, ValidationError

    from querywise.server.schemas import AskResponse, PlanResponse, SearchResponse

    models: dict[str, type[BaseModel]] = {"/v1/plan": PlanResponse, "/v1/ask": AskResponse, "/v1/search": SearchResponse}
    model = models[path]
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return str(exc)[:500]
    return None


def _fault_phase(client: Any, url: str, name: str, mode: Mode, n: int, fake_mode: Any, served: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    follow = _follow_ups()
    fake_mode.value = MODE_NAMES.index(name)
    time.sleep(0.1)  # the fake has read the mode (its wait)
    before, asked_before = _scrape(client, url), served.value

    def one(i: int) -> dict[str, Any]:
        history, message, _ = follow[i % len(follow)]
        path = "/v1/plan" if i % 2 == 0 else "/v1/ask"
        status, data, text, took = _post(client, url, path, {"message": message, "history": history, **({"k": 5} if path == "/v1/ask" else {})})
        return {"i": i, "path": path, "message": message, "history": history, "status": status, "data": data, "text": text, "s": took}

    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        done = list(pool.map(one, range(n)))
    wall = time.perf_counter() - started
    after = _scrape(client, url)
    seen: Counter[str] = Counter()
    actions: Counter[str] = Counter()
    asked_on: Counter[str] = Counter()
    calls = llm_moves = unexpected = gated = 0
    findings: list[dict[str, Any]] = []
    for d in done:
        bad = f"HTTP {d['status']}" if d["status"] != 200 else _well_formed(d["path"], d["data"])
        if bad:
            findings.append({"mode": name, "request": {"path": d["path"], "message": d["message"], "history": d["history"]},
                             "status": d["status"], "problem": bad, "response": d["text"][:3000]})
            continue
        plan = d["data"]["plan"]
        actions[plan["action"]["type"]] += 1
        if plan["action"]["type"] == "ask":  # the plan's route, and the route whose fail-closed policy applied (the step says)
            first: dict[str, Any] = next((x for x in plan["trace"] if x["move"] == "llm_plan"), {})
            why = str(first.get("reason", ""))
            policy = why.rsplit(" on route ", 1)[-1] if " on route " in why else "?"
            asked_on[f"{plan['route']} (policy of {policy})"] += 1
        for step in plan["trace"]:
            gated += step["move"] == "llm_plan" and step["status"] == "skipped"
            calls += step.get("llm_calls", 0)
            llm = step.get("llm") or {}
            if step["status"] == "fallback" and llm.get("fallback"):
                seen[llm["fallback"]] += 1
                llm_moves += 1
                unexpected += llm["fallback"] != mode.reason
            elif step["move"] == "llm_plan" and step["status"] == "ran":
                llm_moves += 1
    counted = _delta(after, before, "querywise_llm_fallbacks_total", "reason")
    statuses = Counter(str(d["status"]) for d in done)
    metrics_statuses = {k: int(v) for k, v in _delta(after, before, "querywise_requests_total").items() if "route=/metrics" not in k}
    agree = counted == {k: float(v) for k, v in seen.items()} and _delta(after, before, "querywise_llm_calls_total").get("", 0.0) == calls
    if not agree:
        findings.append({"mode": name, "problem": "the fallbacks /metrics counted differ from the traces'", "metrics": counted, "traces": dict(seen),
                         "llm_calls_metrics": _delta(after, before, "querywise_llm_calls_total"), "llm_calls_traces": calls})
    if unexpected:
        findings.append({"mode": name, "problem": f"{unexpected} fallbacks under another reason than {mode.reason!r}", "traces": dict(seen)})
    result = {
        "provider_does": mode.does, "requests": n, "statuses": dict(statuses), "metrics_requests_by_route_status": metrics_statuses,
        "five_xx": sum(v for k, v in statuses.items() if k.startswith("5")) + statuses.get("0", 0),
        "llm_moves_in_traces": llm_moves, "llm_calls_in_traces": calls, "llm_calls_in_metrics": _delta(after, before, "querywise_llm_calls_total").get("", 0.0),
        "fallbacks_in_traces": dict(seen), "fallbacks_in_metrics": {k: int(v) for k, v in counted.items()}, "agree": agree,
        "moves_not_called_in_metrics": _delta(after, before, "querywise_llm_moves_not_called_total").get("", 0.0),
        "llm_plan_gated_off": gated, "actions": dict(actions), "asked_on_routes": dict(asked_on), "provider_http_requests": served.value - asked_before,
        "fallback_rate_gauge_after": after.get(("querywise_llm_fallback_rate", ()), None),
        "latency": percentiles([d["s"] for d in done]), "wall_s": round(wall, 2), "requests_per_s": round(n / wall, 1),
    }  # fmt: skip
    return result, findings


def _notice_corpus(r: int) -> list[Any]:
    from querywise.corpus import Chunk
    from querywise.demo import demo_corpus

    notice = Chunk(id=f"notice-rebuild-{r}", text=NOTICE, title="Store notice", payload={"family": "notice", "markets": ["eu", "us"]})
    return [*demo_corpus(), notice]


def _rebuild_phase(client: Any, url: str, settings: Any, embedder: Any, seconds: float, rebuilds: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from querywise.index import build_index

    follow = _follow_ups()
    stop = threading.Event()
    builds: list[dict[str, Any]] = []

    def rebuild() -> None:
        t0 = time.perf_counter()
        for r in range(rebuilds):
            time.sleep(max(0.0, t0 + (r + 0.5) * seconds / rebuilds - time.perf_counter()))
            started = time.perf_counter()
            with build_index(_notice_corpus(r), INDEX, settings=settings, embedder=embedder) as ix:
                builds.append({"build_id": ix.manifest.build_id, "at_s": round(started - t0, 2), "took_s": round(time.perf_counter() - started, 2)})

    def stream(worker: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        i = worker
        while not stop.is_set():
            kind = ("/v1/ask", "/v1/search", "/v1/plan")[i % 3]
            history, message, _ = follow[i % len(follow)]
            body = {"text": NOTICE_QUERY, "k": 10, "mode": "bm25"} if kind == "/v1/search" else {"message": message, "history": history, "k": 10}
            if kind == "/v1/plan":
                body.pop("k")
            status, data, text, took = _post(client, url, kind, body)
            out.append({"path": kind, "body": body, "status": status, "data": data, "text": text, "s": took, "at": time.perf_counter()})
            i += THREADS
        return out

    builder = threading.Thread(target=rebuild)
    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(stream, w) for w in range(THREADS)]
        builder.start()
        builder.join()
        time.sleep(max(0.0, started + seconds - time.perf_counter()))
        stop.set()
        done = [x for f in futures for x in f.result()]
    findings: list[dict[str, Any]] = []
    notice_hits = 0
    for d in done:
        bad = f"HTTP {d['status']}" if d["status"] != 200 else _well_formed(d["path"], d["data"])
        if bad:
            findings.append({"mode": "rebuild", "request": {"path": d["path"], **d["body"]}, "status": d["status"], "problem": bad, "response": d["text"][:3000]})
            continue
        notice_hits += sum(h["id"].startswith("notice-") for h in d["data"].get("hits", []))
    statuses = Counter(str(d["status"]) for d in done)
    return {
        "seconds": round(time.perf_counter() - started, 1), "requests": len(done), "statuses": dict(statuses),
        "five_xx": sum(v for k, v in statuses.items() if k.startswith("5")) + statuses.get("0", 0),
        "by_route": dict(Counter(d["path"] for d in done)), "rebuilds": builds,
        "notice_hits_served": notice_hits, "latency": percentiles([d["s"] for d in done]),
    }, findings  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="50 requests per mode, a 10 s stream with 2 rebuilds; written to bench/work/service-faults/")
    args = ap.parse_args()
    n, stream_s, n_rebuilds = (50, 10.0, 2) if args.quick else (200, 24.0, 4)
    t_all = time.perf_counter()
    os.environ[KEY_ENV] = "bench-key"
    os.environ[SECRET_ENV] = SECRET
    import httpx

    from querywise.demo import demo_corpus
    from querywise.embed import embedder_for
    from querywise.index import Index, build_index
    from querywise.index.builds import read_current

    if INDEX.exists():
        shutil.rmtree(INDEX)
    findings: list[dict[str, Any]] = []
    with _fake_provider() as (fake_url, fake_mode, served):
        settings = _settings(fake_url)
        log("service_faults: the demo index (real embedding model)")
        embedder = embedder_for(settings)
        build_index(demo_corpus(), INDEX, settings=settings, embedder=embedder).close()
        modes = _modes()
        results: dict[str, Any] = {}
        with _service(fake_url) as svc, httpx.Client(headers={"Authorization": f"Bearer {_token()}"}, timeout=30,
                                                     limits=httpx.Limits(max_connections=THREADS * 2)) as client:
            log(f"service at {svc['url']} (loaded in {svc['load_s']} s), serving build {svc['build_id']}")
            for name in MODE_NAMES:
                log(f"service_faults: {name}: {n} requests from {THREADS} threads")
                results[name], found = _fault_phase(client, svc["url"], name, modes[name], n, fake_mode, served)
                findings += found
                r = results[name]
                log(f"  statuses {r['statuses']}, fallbacks /metrics {r['fallbacks_in_metrics']} traces {r['fallbacks_in_traces']}, "
                    f"p50 {r['latency']['p50_ms']:.0f} ms p95 {r['latency']['p95_ms']:.0f} ms")
            fake_mode.value = MODE_NAMES.index("ok")
            log(f"service_faults: rebuild: {n_rebuilds} rebuilds during a {stream_s:g} s stream from {THREADS} threads")
            rebuild, found = _rebuild_phase(client, svc["url"], settings, embedder, stream_s, n_rebuilds)
            findings += found
            current = read_current(INDEX)
            with Index.open(INDEX, settings=settings, embedder=embedder) as fresh:
                fresh_top = [h.id for h in fresh.search(NOTICE_QUERY, mode="bm25", k=3)]
            builds_left = sorted(p.name for p in (INDEX / "builds").iterdir() if not p.name.startswith("."))
            rebuild.update({
                "served_build_id": svc["build_id"], "served_build_still_on_disk": Path(svc["build"]).is_dir(), "current_after": current,
                "builds_on_disk_after": builds_left, "fresh_open_top3_for_notice": fresh_top,
            })  # fmt: skip
            hostile = run_families(settings=settings, embedder=embedder, service_url=svc["url"], token=_token(), secret=SECRET, folder=HERE,
                                   quick=args.quick, body_timeout_s=BODY_TIMEOUT_S)
            final_metrics = _scrape(client, svc["url"])
        log("service_faults: restart: a new service process on the same folder")
        with _service(fake_url) as svc2, httpx.Client(headers={"Authorization": f"Bearer {_token()}"}, timeout=30) as client:
            status, data, _, _ = _post(client, svc2["url"], "/v1/search", {"text": NOTICE_QUERY, "k": 3, "mode": "bm25"})
            rebuild["after_restart"] = {"build_id": svc2["build_id"], "status": status,
                                        "top3_for_notice": [h["id"] for h in (data or {}).get("hits", [])], "load_s": svc2["load_s"]}
        if (close := getattr(embedder, "close", None)) is not None:
            close()
    rebuild["kept_the_build_it_opened"] = (rebuild["notice_hits_served"] == 0 and rebuild["served_build_id"] != current
                                           and rebuild["after_restart"]["build_id"] == current)
    five_xx_metrics = {k: int(v) for (nm, labels), v in final_metrics.items() if nm == "querywise_requests_total"
                       for k in [",".join(f"{a}={b}" for a, b in labels)] if dict(labels).get("status", "").startswith("5")}
    out = {
        "setup": {
            "deployment": "bundled demo (querywise.demo: querywise.toml, demo_corpus), real embedding model, one uvicorn worker in its own process",
            "llm": {"provider": "openai (real SDK client from the settings)", "base_url": "the fake provider (own process)", "timeout_s": DEADLINE_S,
                    "max_retries": settings.llm.max_retries, "moves": list(settings.understanding.moves)},
            "requests_per_mode": n, "threads": THREADS, "messages": "the demo's follow-ups (rewrites.jsonl) with their history; /v1/plan and /v1/ask alternately",
            "session": {"market": SESSION_MARKET}, "service_load_s": svc["load_s"],
        },
        "modes": results, "rebuild": rebuild, "hostile": hostile, "five_xx_in_metrics": five_xx_metrics, "findings": findings,
        "all_counts_agree": all(r["agree"] for r in results.values()), "total_s": round(time.perf_counter() - t_all, 1),
    }  # fmt: skip
    # --quick is a smoke run: kept out of bench/results
    path = publish("service_faults-quick" if args.quick else "service_faults", out, command=COMMAND + (" --quick" if args.quick else ""),
                   render=lambda d: _markdown(d, d["machine"]["command"]), folder=HERE if args.quick else RESULTS)
    log(f"wrote {path} ({out['total_s']} s); findings: {len(findings)}")


def _markdown(r: dict[str, Any], command: str) -> str:
    s = r["setup"]
    lines = [
        "# The service under faults (`bench/service/faults.py`)", "",
        f"Command: `{command}` ({r['total_s']} s)  ",
        load_line(r["machine"]) + "  ",
        f"Deployment: {s['deployment']}; `[llm]` {s['llm']['provider']}, deadline {s['llm']['timeout_s']} s, max_retries {s['llm']['max_retries']}, "
        f"moves {', '.join(s['llm']['moves'])}. {s['requests_per_mode']} requests per mode from {s['threads']} threads: {s['messages']}. "
        "Latency is the client's, per request.", "",
        "## LLM provider faults", "",
        "| mode | the provider | requests | statuses | fallbacks in /metrics | fallbacks in traces | agree | actions | p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for name, m in r["modes"].items():
        fmt = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "none"  # noqa: E731
        lines.append(f"| {name} | {m['provider_does']} | {m['requests']} | {fmt(m['statuses'])} | {fmt(m['fallbacks_in_metrics'])} | "
                     f"{fmt(m['fallbacks_in_traces'])} | {'yes' if m['agree'] else '**no**'} | {fmt(m['actions'])} | "
                     f"{m['latency']['p50_ms']:.0f} | {m['latency']['p95_ms']:.0f} |")
    b = r["rebuild"]
    lines += [
        "", "LLM calls in /metrics vs in traces: " + "; ".join(f"{k} {v['llm_calls_in_metrics']:g} / {v['llm_calls_in_traces']}" for k, v in r["modes"].items())
        + ". Provider HTTP requests: " + "; ".join(f"{k} {v['provider_http_requests']}" for k, v in r["modes"].items())
        + " (a 500 is retried once within the deadline). Requests the gate sent without an LLM call (no reference to resolve): "
        + "; ".join(f"{k} {v['llm_plan_gated_off']}" for k, v in r["modes"].items()) + ". Fail-closed asks, by the plan's route (and the route whose policy applied: an unsure message between a high-stakes route and another fails closed): "
        + "; ".join(f"{k} {v['asked_on_routes'] or 'none'}" for k, v in r["modes"].items()) + ".", "",
        "## The index folder rebuilt while requests run", "",
        f"{b['requests']} requests in {b['seconds']} s ({', '.join(f'{k} {v}' for k, v in b['by_route'].items())}) from {s['threads']} threads; "
        f"statuses {', '.join(f'{k} {v}' for k, v in b['statuses'].items())}; p50 {b['latency']['p50_ms']:.0f} ms, p95 {b['latency']['p95_ms']:.0f} ms. "
        f"{len(b['rebuilds'])} rebuilds done (each adds a notice chunk): "
        + ", ".join(f"{x['build_id']} at {x['at_s']} s ({x['took_s']} s)" for x in b["rebuilds"]) + ".", "",
        f"The service kept serving the build it opened, `{b['served_build_id']}` (still on disk: {b['served_build_still_on_disk']}): "
        f"{b['notice_hits_served']} hits of the notice were served, while CURRENT named `{b['current_after']}` and a fresh `Index.open` "
        f"of the folder ranks {b['fresh_open_top3_for_notice'][:1]} first. A restarted service opened `{b['after_restart']['build_id']}` and "
        f"ranks {b['after_restart']['top3_for_notice'][:1]} first. **An opened index keeps its build: picking up a new build means a restart "
        "(or rolling the workers).** Builds on disk after: " + ", ".join(f"`{x}`" for x in b["builds_on_disk_after"])
        + " (the held one is never pruned).", "",
        f"5xx counted in /metrics over the whole run: {r['five_xx_in_metrics'] or 'none'}. All fallback counts agree: **{r['all_counts_agree']}**. "
        f"Findings: {len(r['findings'])}" + (" (see the JSON)." if r["findings"] else "."), "",
        *hostile_markdown(r.get("hostile", [])),
    ]  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    main()
