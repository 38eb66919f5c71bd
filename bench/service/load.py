"""The service under load (issue #17): `querywise serve` on 127.0.0.1 driven by locust, headless.

    .venv/bin/python -m bench.service.load [--quick]

Three kinds of process on this machine's 2 cores: the service (`querywise serve -c CONFIG -i
INDEX --workers N` as a user starts it: the bundled demo deployment, the real embedding model
behind the batching embedder, JWT HS256 auth, uvicorn's JSON logs, the default `[server]`
rate limit), the load generator (locust's `Environment` / `create_local_runner` in a child
process, `FastHttpUser`, one token per user: `{"sub": "load-<i>", "market": "eu", "exp"}`), and,
for the LLM run, the fake OpenAI-compatible provider (`querywise.llm.fake_server`, its own
process). The load generator shares the cores with the server: its CPU and the server's are
measured (from /proc) and reported beside the numbers, and the server-side latency is read from
the service's own `/metrics` (`querywise_request_seconds`, every worker scraped).

Messages: the demo's (src/querywise/demo/): first turns from eval_cases.jsonl (no history) and
routes_test.jsonl, follow-ups with their history from rewrites.jsonl, eval_cases.jsonl and the
scripted conversation.jsonl (each turn with the turns before it); 30% follow-ups.

Runs (each user paced at 4.2 requests/s, 50 users: 210 offered requests/s, unless "saturation"):

1. workers: a 15 s saturation run (no wait between requests) against 1 and 2 workers; the
   service is then started with the count that served more plans/s;
2. /v1/plan, 60 s, the demo messages (the per-worker query-embedding LRU is warm after the
   warm-up pass: the hot path); then 15 s at 100 offered requests/s (2/s per user);
3. /v1/plan, 30 s, every message made unique (an opener and a closer around a demo message):
   each request embeds its message (the cold path, what distinct real traffic costs);
4. /v1/ask (k=10), 20 s, the demo messages;
5. if py-spy is installed: two 12 s saturation runs (demo messages, unique messages) with
   `py-spy record --gil` on every worker: where the workers' GIL time goes, by owner;
6. with the LLM tier: `[llm] provider = "openai"` pointed at the fake (time to first token and
   decoding rate of the `[llm]` defaults, the cost model's: 0.4 s, 120 tokens/s; a plan call is
   600 in / 80 out tokens), moves `llm_rewrite` and `llm_route` on; /v1/plan, 60 s; its p95 is
   compared with `querywise.llm.cost.cost_model` at the share of requests that called the LLM.

Then an in-process profile of the plan (cProfile and each move's trace latency, hot and cold
embedding cache). Writes bench/results/service_load.json and .md (`--quick`: 10 s runs, written
to bench/work/service-load/).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import RESULTS, ROOT, log
from bench.report import publish
from bench.service.load_measure import (
    _UNIQUE,
    _histogram,
    _llm_counts,
    _locust,
    _machine_cpu_s,
    _merged_delta,
    _moves,
    _per_worker,
    _tree_cpu_s,
    _workers_metrics,
)
from bench.service.load_profile import _profile, _spy_report, _start_spies
from bench.service.load_report import _markdown
from bench.service.load_setup import (
    FOLLOW_UP_SHARE,
    HERE,
    INDEX,
    KEY_ENV,
    MARKET,
    ONE_CALL,
    SECRET,
    SECRET_ENV,
    SPAWN_RATE,
    USERS,
    _fake_provider,
    _llm_config,
    messages,
)

COMMAND = ".venv/bin/python -m bench.service.load"
PACE = 4.2  # requests per second per user (locust constant_throughput): 210 offered per second, 5% over the target
LOW_PACE = 2.0  # 100 offered per second: the latency at half the target
TARGETS = {"failures": 0, "plans_per_s": 200.0, "p95_ms": 50.0, "llm_p95_within": 0.10}


# --- the service's process ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def _serve(config: Path, workers: int, name: str) -> Iterator[dict[str, Any]]:
    """`querywise serve -c config -i INDEX --workers N` until every worker has started: {"url", "pid", "load_s"}."""
    import httpx

    port = _free_port()
    logpath = HERE / f"serve-{name}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", SECRET_ENV: SECRET, KEY_ENV: "bench-key"}
    started = time.perf_counter()
    with open(logpath, "w", encoding="utf-8") as logfile:  # started in HERE: with --workers N its jobs file lands there
        proc = subprocess.Popen([sys.executable, "-m", "querywise", "serve", "-c", str(config), "-i", str(INDEX), "--port", str(port),
                                 "--workers", str(workers)], cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=logfile)  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"querywise serve did not start: {logpath.read_text()[-2000:]}")
                text = logpath.read_text(encoding="utf-8", errors="replace")
                if text.count("Application startup complete") >= workers:
                    with contextlib.suppress(httpx.TransportError):
                        if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                            break
                time.sleep(0.2)
            yield {"url": url, "pid": proc.pid, "load_s": round(time.perf_counter() - started, 1), "log": str(logpath)}
        finally:
            proc.send_signal(signal.SIGTERM)  # graceful: uvicorn drains
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _warm(url: str, path: str, pool: dict[str, Any], passes: int = 2, threads: int = 16) -> None:
    """Every message `passes` times over new connections (spread over the workers): lazy imports,
    the first connections and the query-embedding LRU of each worker."""
    import httpx
    import jwt

    token = jwt.encode({"sub": "warm-up", "market": MARKET, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")
    items = [*pool["first"], *pool["follow_up"]] * passes

    def one(item: dict[str, Any]) -> int:
        return httpx.post(f"{url}{path}", json=item, headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code

    with ThreadPoolExecutor(threads) as ex:
        statuses = list(ex.map(one, items))
    bad = [s for s in statuses if s != 200]
    if bad:
        raise RuntimeError(f"warm-up: {len(bad)} answers were not 200: {sorted(set(bad))}")


def _run(name: str, svc: dict[str, Any], workers: int, path: str, pool: dict[str, Any], *, duration_s: float, pace: float | None,
         distinct: bool = False, messages_kind: str = "demo", spy: bool = False) -> dict[str, Any]:
    """One measured run: locust's view, the server's /metrics, and who used the CPU."""
    import numpy as np

    log(f"service_load: {name}: {path}, {USERS} users, {f'{pace:g}/s each' if pace else 'no wait'}, {duration_s:g} s"
        + (", unique messages" if distinct else ""))
    before = _workers_metrics(svc["url"], workers)
    spies = _start_spies(svc, workers, name, duration_s) if spy else []
    srv0, (busy0, steal0), t0 = _tree_cpu_s(svc["pid"]), _machine_cpu_s(), time.perf_counter()
    raw = _locust(name, svc["url"], path, pool, duration_s=duration_s, pace=pace, distinct=distinct)
    srv1, (busy1, steal1), wall = _tree_cpu_s(svc["pid"]), _machine_cpu_s(), time.perf_counter() - t0
    for proc in spies:
        proc.wait(timeout=60)
    after = _workers_metrics(svc["url"], workers)
    delta = _merged_delta(before, after)
    rows = raw["rows"]
    lat = np.asarray([r[1] for r in rows], dtype=np.float64)
    ok = sum(r[2] for r in rows)
    span = (max(r[0] + r[1] / 1000 for r in rows) - min(r[0] for r in rows)) if rows else 0.0
    # Throughput in the steady window: once every user has started, until the last second.
    lo = min(r[0] for r in rows) + USERS / SPAWN_RATE + 1.0 if rows else 0.0
    hi = max(r[0] for r in rows) - 1.0 if rows else 0.0
    steady = sum(1 for r in rows if r[2] and lo <= r[0] < hi) / (hi - lo) if hi > lo else 0.0
    called = np.asarray([r[1] for r in rows if r[3]], dtype=np.float64)
    plain = np.asarray([r[1] for r in rows if not r[3]], dtype=np.float64)

    def pct(a: Any) -> dict[str, Any]:
        if not len(a):
            return {"n": 0}
        return {"n": len(a), **{f"p{p}_ms": round(float(np.percentile(a, p)), 2) for p in (50, 95, 99)}, "mean_ms": round(float(a.mean()), 2),
                "max_ms": round(float(a.max()), 2)}

    server = _histogram(delta, "querywise_request_seconds", {"route": path})
    per_worker = _per_worker(before, after, path)
    locust_cpu, server_cpu, busy, steal = raw["cpu_s"], srv1 - srv0, busy1 - busy0, steal1 - steal0
    result = {
        "path": path, "messages": messages_kind, "users": USERS, "spawn_rate": SPAWN_RATE, "duration_s": duration_s,
        "pace_per_user_per_s": pace, "offered_per_s": USERS * pace if pace else None,
        "requests": len(rows), "ok": int(ok), "failures": len(rows) - int(ok), "failure_reasons": raw["failures"],
        "throughput_per_s": round(steady, 1), "throughput_whole_run_per_s": round(ok / span, 1) if span else 0.0, "span_s": round(span, 2),
        "server_cpu_ms_per_request": round((srv1 - srv0) / max(ok, 1) * 1000, 2),
        "latency": pct(lat), "latency_llm_called": pct(called), "latency_no_llm_call": pct(plain), "share_llm_called": round(len(called) / len(rows), 4) if rows else 0.0,
        "locust_stats": raw["locust"],
        "server_side": {**server, "workers_seen": len(after), "requests_per_worker": per_worker, "moves": _moves(delta),
                        "llm": _llm_counts(delta), "statuses": {dict(lab)["status"]: int(v) for (n, lab), v in delta.items()
                                                                if n == "querywise_requests_total" and dict(lab).get("route") == path and v}},
        "cpu_cores": {"server": round(server_cpu / wall, 2), "load_generator": round(locust_cpu / raw["wall_s"], 2),
                      "machine_busy": round(busy / wall, 2), "other": round(max(0.0, busy - server_cpu - locust_cpu) / wall, 2),
                      "steal": round(steal / wall, 2)},
        "os_load_avg_after": os.getloadavg(),
    }  # fmt: skip
    L = result["latency"]
    log(f"  {result['requests']} requests, {result['failures']} failures, {result['throughput_per_s']}/s, p50 {L.get('p50_ms')} p95 {L.get('p95_ms')} "
        f"p99 {L.get('p99_ms')} ms; server p95 {server['p95_ms']} ms; cores server {result['cpu_cores']['server']} locust "
        f"{result['cpu_cores']['load_generator']} machine {result['cpu_cores']['machine_busy']} steal {result['cpu_cores']['steal']}")
    if spies:
        result["py_spy"] = _spy_report(name, result)
        log("  py-spy (GIL held): " + ", ".join(f"{k} {v:.0%}" for k, v in list(result["py_spy"]["share"].items())[:8]))
    return result


# --- main ---------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="10 s runs; written to bench/work/service-load/")
    args = ap.parse_args()
    t_all = time.perf_counter()
    q = args.quick
    durations = {"probe": 8.0 if q else 15.0, "plan": 10.0 if q else 60.0, "distinct": 10.0 if q else 30.0, "ask": 8.0 if q else 20.0,
                 "low": 6.0 if q else 15.0, "py_spy": 8.0 if q else 12.0, "llm": 10.0 if q else 60.0}  # fmt: skip
    spy = (Path(sys.executable).parent / "py-spy").exists()
    HERE.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import locust

    from querywise.config import LLMSettings, Price, load_settings
    from querywise.demo import demo_corpus, demo_file
    from querywise.llm.cost import call_latency_s, cost_model

    demo_config = demo_file("querywise.toml")
    if not INDEX.exists():
        from querywise.index import build_index

        log(f"service_load: building the demo index in {INDEX}")
        build_index(demo_corpus(), INDEX, settings=load_settings(demo_config)).close()
    pool = messages()
    _UNIQUE[0] = len(pool["first"]) + len(pool["follow_up"])  # the first round would be the demo messages themselves
    log(f"service_load: {len(pool['first'])} first turns, {len(pool['follow_up'])} follow-ups")
    runs: dict[str, Any] = {}

    probes: dict[int, Any] = {}
    for n in (1, 2):
        with _serve(demo_config, n, f"probe-{n}w") as svc:
            _warm(svc["url"], "/v1/plan", pool)
            probes[n] = _run(f"saturation-{n}w", svc, n, "/v1/plan", pool, duration_s=durations["probe"], pace=None)
            probes[n]["service_load_s"] = svc["load_s"]
    workers = max(probes, key=lambda n: probes[n]["throughput_per_s"])
    served = ", ".join(f"{n}: {p['throughput_per_s']}" for n, p in probes.items())
    log(f"service_load: {workers} worker(s) served more plans/s ({served})")
    for n, p in probes.items():
        runs[f"saturation_{n}_worker{'s' if n > 1 else ''}"] = p

    with _serve(demo_config, workers, "main") as svc:
        _warm(svc["url"], "/v1/plan", pool)
        runs["plan"] = _run("plan", svc, workers, "/v1/plan", pool, duration_s=durations["plan"], pace=PACE)
        runs["plan_100_per_s"] = _run("plan-100", svc, workers, "/v1/plan", pool, duration_s=durations["low"], pace=LOW_PACE)
        runs["plan_unique_messages"] = _run("plan-unique", svc, workers, "/v1/plan", pool, duration_s=durations["distinct"], pace=PACE, distinct=True,
                                            messages_kind="demo, each made unique (opener + closer)")
        _warm(svc["url"], "/v1/ask", pool, passes=1)
        runs["ask"] = _run("ask", svc, workers, "/v1/ask", pool, duration_s=durations["ask"], pace=PACE)
        main_load_s = svc["load_s"]
        profiled: dict[str, Any] = {}
        if spy:  # where the workers' time goes, at saturation: py-spy slows them, so these runs are not in the table
            profiled["hot"] = _run("spy-hot", svc, workers, "/v1/plan", pool, duration_s=durations["py_spy"], pace=None, spy=True)
            profiled["cold"] = _run("spy-cold", svc, workers, "/v1/plan", pool, duration_s=durations["py_spy"], pace=None, spy=True, distinct=True,
                                    messages_kind="demo, each made unique (opener + closer)")
        else:
            log("service_load: py-spy is not installed: no sampling of the workers")

    defaults = LLMSettings()
    ttft_s, tokens_per_s = defaults.ttft_s, defaults.tokens_per_s
    with _fake_provider(ttft_s, tokens_per_s) as (fake_url, fake_report):
        config = _llm_config(fake_url)
        with _serve(config, workers, "llm") as svc:
            _warm(svc["url"], "/v1/plan", pool, passes=1, threads=25)
            runs["plan_llm"] = _run("plan-llm", svc, workers, "/v1/plan", pool, duration_s=durations["llm"], pace=PACE)
            llm_load_s = svc["load_s"]
    fake_stats = fake_report.get(timeout=30)
    import numpy as np

    late = np.asarray(fake_stats["late_ms"] or [0.0])
    r = runs["plan_llm"]
    share = r["share_llm_called"]
    model = cost_model(price=Price(usd_per_m_in=1.0, usd_per_m_out=5.0), ttft_s=ttft_s, tokens_per_s=tokens_per_s, one_call=ONE_CALL, gated_share=share)
    base_ms = r["latency_no_llm_call"]["p50_ms"]  # what a plan costs without the LLM, in the same run (same load, same server)
    predicted_ms = model.gated.added_s_p95 * 1000 + base_ms
    measured_ms = r["latency"]["p95_ms"]
    call_ms = call_latency_s(ONE_CALL[1], ttft_s=ttft_s, tokens_per_s=tokens_per_s) * 1000
    r["cost_model"] = {
        "assumptions": {"ttft_s": ttft_s, "tokens_per_s": tokens_per_s, "one_call_tokens": ONE_CALL, "source": "the [llm] defaults (LLMSettings), the cost model's"},
        "gated": json.loads(model.gated.model_dump_json()), "one_call_added_ms": round(call_ms, 1), "base_ms": base_ms,
        "predicted_p95_ms": round(predicted_ms, 1), "measured_p95_ms": measured_ms,
        "relative_error": round((measured_ms - predicted_ms) / predicted_ms, 4),
        "llm_called_p50_vs_model_ms": {"measured": r["latency_llm_called"].get("p50_ms"), "model": round(call_ms + base_ms, 1)},
        "how": "predicted p95 = cost_model(gated_share = the measured share of requests whose plan called the LLM).gated.added_s_p95 "
               "+ the p50 of the requests of the same run that did not call the LLM (what the service adds around the call)",
    }  # fmt: skip
    r["fake_provider"] = {"requests": fake_stats["requests"], "late_ms": {"p50": round(float(np.percentile(late, 50)), 2),
                                                                          "p95": round(float(np.percentile(late, 95)), 2), "max": round(float(late.max()), 2)}}
    log(f"service_load: LLM run p95 {measured_ms} ms against the cost model's {predicted_ms:.0f} ms ({r['cost_model']['relative_error']:+.1%}), "
        f"share calling the LLM {share:.0%}; the fake woke {r['fake_provider']['late_ms']['p95']} ms late at p95")

    log("service_load: in-process profile of the plan")
    profile = _profile(pool)

    p, pr = runs["plan"], runs["plan_llm"]
    met = {
        "plan: 0 failures": p["failures"] == 0, f"plan: ≥ {TARGETS['plans_per_s']:g} plans/s": p["throughput_per_s"] >= TARGETS["plans_per_s"],
        f"plan: p95 ≤ {TARGETS['p95_ms']:g} ms": p["latency"]["p95_ms"] <= TARGETS["p95_ms"],
        "plan with the LLM: 0 failures": pr["failures"] == 0,
        "plan with the LLM: p95 within 10% of the cost model": abs(pr["cost_model"]["relative_error"]) <= TARGETS["llm_p95_within"],
    }  # fmt: skip
    out = {
        "setup": {
            "service": f"querywise serve -c <config> -i {INDEX.relative_to(ROOT)} --port P --workers N (uvicorn on uvloop + httptools, JSON logs incl. access log on stderr)",
            "deployment": "bundled demo (querywise.demo: querywise.toml, demo_corpus), real embedding model behind the batching embedder, JWT HS256",
            "workers": workers, "workers_chosen_by": "the saturation runs: the count that served more plans/s",
            "users": USERS, "spawn_rate": SPAWN_RATE, "pace_per_user_per_s": PACE, "follow_up_share": FOLLOW_UP_SHARE,
            "messages": {"first_turns": len(pool["first"]), "follow_ups": len(pool["follow_up"]),
                         "from": "demo eval_cases.jsonl, routes_test.jsonl (first turns); rewrites.jsonl, eval_cases.jsonl with history, "
                                 "conversation.jsonl turns with the turns before (follow-ups)"},
            "load_generator": f"locust {locust.__version__}, FastHttpUser, Environment + create_local_runner in a child process on the same 2 cores",
            "durations_s": durations, "service_load_s": {"main": main_load_s, "llm": llm_load_s},
            "llm": {"provider": "openai (the real SDK client) at the fake provider in its own process", "moves": ["llm_rewrite", "llm_route"],
                    "timeout_s": defaults.timeout_s, "cache_size": defaults.cache_size},
        },
        "runs": runs, "targets": TARGETS, "targets_met": met, "profile": profile, "py_spy_runs": profiled, "total_s": round(time.perf_counter() - t_all, 1),
    }  # fmt: skip
    # --quick is a smoke run: kept out of bench/results
    path = publish("service_load-quick" if q else "service_load", out, command=COMMAND + (" --quick" if q else ""),
                   render=lambda d: _markdown(d, d["machine"]["command"], d["machine"]), folder=HERE if q else RESULTS)
    log(f"wrote {path} ({out['total_s']} s); targets met: {met}")


if __name__ == "__main__":
    main()
