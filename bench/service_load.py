"""The service under load (issue #17): `querywise serve` on 127.0.0.1 driven by locust, headless.

    .venv/bin/python -m bench.service_load [--quick]

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
import multiprocessing as mp
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

from bench import RESULTS, ROOT, WORK, log, machine_info, write_json

COMMAND = ".venv/bin/python -m bench.service_load"
HERE = WORK / "service-load"
INDEX = HERE / "index"
SECRET_ENV, SECRET = "QUERYWISE_JWT_SECRET", "bench-service-load-secret-of-at-least-32-bytes"
KEY_ENV = "QW_BENCH_LOAD_OPENAI_KEY"
MARKET = "eu"
USERS, SPAWN_RATE = 50, 50.0
PACE = 4.2  # requests per second per user (locust constant_throughput): 210 offered per second, 5% over the target
LOW_PACE = 2.0  # 100 offered per second: the latency at half the target
FOLLOW_UP_SHARE = 0.3
ONE_CALL = (600, 80)  # the fake's tokens per plan call: the cost model's one structured call
TARGETS = {"failures": 0, "plans_per_s": 200.0, "p95_ms": 50.0, "llm_p95_within": 0.10}
OPENERS = ["", "Hi,", "Hello,", "Hey,", "Quick question:", "Sorry to bother you,", "Good morning,", "Hi there,", "Hello again,",
           "One more thing:", "Excuse me,", "Hey team,"]  # fmt: skip
CLOSERS = ["", "thanks", "thank you", "thanks!", "cheers", "please", "many thanks", "thx", "ty", "please help", "any idea?", "asap"]


# --- messages ------------------------------------------------------------------------------------


def messages() -> dict[str, list[dict[str, Any]]]:
    """The demo's first turns and follow-ups (with their history), deduplicated."""
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    first: dict[str, dict[str, Any]] = {}
    follow: dict[str, dict[str, Any]] = {}
    for _, rec in read_jsonl(demo_file("eval_cases.jsonl")):
        item = {"message": rec["message"], "history": rec.get("history") or []}
        (follow if item["history"] else first)[json.dumps(item)] = item
    for _, rec in read_jsonl(demo_file("routes_test.jsonl")):
        first[json.dumps({"message": rec["text"], "history": []})] = {"message": rec["text"], "history": []}
    for _, rec in read_jsonl(demo_file("rewrites.jsonl")):
        follow[json.dumps(rec["message"]) + json.dumps(rec["history"])] = {"message": rec["message"], "history": rec["history"]}
    turns = [rec["message"] for _, rec in read_jsonl(demo_file("conversation.jsonl"))]
    for i in range(1, len(turns)):
        follow[f"conversation {i}"] = {"message": turns[i], "history": turns[:i]}
    return {"first": list(first.values()), "follow_up": list(follow.values())}


def _labels() -> dict[str, str]:
    """message -> its route in the demo's labelled sets (what the fake LLM answers for the route)."""
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    out = {rec["text"]: rec["label"] for _, rec in read_jsonl(demo_file("routes_test.jsonl"))}
    out.update({rec["message"]: rec["route"] for _, rec in read_jsonl(demo_file("eval_cases.jsonl")) if rec.get("route")})
    return out


# --- the load generator (a child process; gevent patched before anything else is imported) ------


def _child_main(config_path: str) -> None:
    """Run one locust load in this process and write its result next to the config."""
    import itertools
    import random
    import resource

    import gevent  # type: ignore[import-untyped]  # no stubs; locust's dependency
    import jwt
    from locust import FastHttpUser, task
    from locust.env import Environment

    cfg = json.loads(Path(config_path).read_text())
    pool, n_first = cfg["pool"], len(cfg["pool"]["first"])
    ids, unique = itertools.count(), itertools.count(cfg["unique_from"])
    rows: list[tuple[float, float, bool, bool]] = []  # start (epoch s), response ms, ok, the plan called the LLM
    failures: dict[str, int] = {}
    path, body_extra = cfg["path"], ({"k": 10} if cfg["path"] == "/v1/ask" else {})

    def pick(rng: random.Random) -> dict[str, Any]:
        kind = "follow_up" if rng.random() < FOLLOW_UP_SHARE else "first"
        item = dict(rng.choice(pool[kind]))
        if cfg["distinct"]:  # a unique message per request: an opener and a closer around a demo message
            i = next(unique)
            item = dict((pool["first"] + pool["follow_up"])[i % (n_first + len(pool["follow_up"]))])
            j = i // (n_first + len(pool["follow_up"]))
            opener, closer = OPENERS[j % len(OPENERS)], CLOSERS[(j // len(OPENERS)) % len(CLOSERS)]
            item["message"] = " ".join(x for x in (opener, item["message"], closer) if x)
        return item

    pace = cfg["pace"]

    class LoadUser(FastHttpUser):
        """Paced: the user's requests start at exponential intervals of mean 1/pace (catching up when
        the service was slow), so the 50 users together send about a Poisson stream of 50 x pace
        per second; locust's `constant_throughput` would keep all users in step with their spawn
        and send bursts of 50 at once. Unpaced: back to back."""

        host = cfg["url"]

        def wait_time(self) -> float:
            if not pace:
                return 0.0
            self.next_start += self.rng.expovariate(pace)
            return max(0.0, self.next_start - time.monotonic())

        def on_start(self) -> None:
            self.i = next(ids)
            self.rng = random.Random(1000 + self.i)
            token = jwt.encode({"sub": f"load-{self.i}", "market": MARKET, "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256")
            self.headers = {"Authorization": f"Bearer {token}"}
            if pace:
                gevent.sleep(self.rng.expovariate(pace))
            self.next_start = time.monotonic()

        @task
        def post(self) -> None:
            body = {**pick(self.rng), **body_extra}
            started = time.time()
            with self.client.post(path, json=body, headers=self.headers, name=path, catch_response=True) as r:
                called, why = False, None
                if r.status_code != 200:
                    why = f"HTTP {r.status_code}: {(r.text or '')[:120]}"
                else:
                    try:
                        data = json.loads(r.content or b"")
                        called = any(step.get("llm_calls") for step in data["plan"]["trace"])
                        if path == "/v1/ask" and not isinstance(data.get("hits"), list):
                            why = "no hits list"
                    except (ValueError, KeyError, TypeError) as exc:
                        why = f"bad body: {type(exc).__name__}"
                if why:
                    r.failure(why)
                    failures[why] = failures.get(why, 0) + 1
                else:
                    r.success()
                rows.append((started, float(r.request_meta["response_time"]), why is None, called))

    env = Environment(user_classes=[LoadUser])
    runner = env.create_local_runner()
    cpu0, wall0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    runner.start(cfg["users"], spawn_rate=cfg["spawn_rate"])
    gevent.spawn_later(cfg["duration_s"], runner.quit)
    runner.greenlet.join()
    cpu1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - wall0
    total = env.stats.total
    out = {
        "rows": rows, "failures": failures, "wall_s": wall,
        "cpu_s": (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime),
        "locust": {"num_requests": total.num_requests, "num_failures": total.num_failures, "p50_ms": total.get_response_time_percentile(0.5),
                   "p95_ms": total.get_response_time_percentile(0.95), "p99_ms": total.get_response_time_percentile(0.99),
                   "errors": {str(e.error): e.occurrences for e in env.stats.errors.values()}, "cpu_warning": runner.cpu_warning_emitted},
    }  # fmt: skip
    Path(cfg["out"]).write_text(json.dumps(out), encoding="utf-8")


_UNIQUE = [0]  # the next unique message's number: no run repeats another's (the workers' LRU would answer it)


def _locust(name: str, url: str, path: str, pool: dict[str, Any], *, duration_s: float, pace: float | None, distinct: bool = False) -> dict[str, Any]:
    """One headless locust run in a child process: its raw result."""
    out_path = HERE / f"locust-{name}-out.json"
    cfg: dict[str, Any] = {"url": url, "path": path, "pool": pool, "users": USERS, "spawn_rate": SPAWN_RATE, "duration_s": duration_s, "pace": pace,
           "distinct": distinct, "unique_from": _UNIQUE[0], "out": str(out_path)}  # fmt: skip
    cfg_path = HERE / f"locust-{name}.json"
    cfg_path.write_text(json.dumps(cfg), encoding="utf-8")
    code = "from gevent import monkey; monkey.patch_all()\nimport sys\nfrom bench.service_load import _child_main\n_child_main(sys.argv[1])"
    with open(HERE / f"locust-{name}.log", "w", encoding="utf-8") as logfile:
        subprocess.run([sys.executable, "-c", code, str(cfg_path)], cwd=ROOT, check=True, stdout=logfile, stderr=subprocess.STDOUT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=duration_s + 120)
    result: dict[str, Any] = json.loads(out_path.read_text())
    if distinct:
        _UNIQUE[0] += len(result["rows"]) + 10 * USERS  # and the requests cut off when the run stopped
        if _UNIQUE[0] > len(OPENERS) * len(CLOSERS) * (len(pool["first"]) + len(pool["follow_up"])):
            raise RuntimeError("out of unique messages: add openers or closers")
    return result


# --- CPU from /proc --------------------------------------------------------------------------------


def _proc_cpu() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds) of every process."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            out[int(d.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    return out


def _tree_cpu_s(root: int) -> float:
    procs = _proc_cpu()
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(procs[p][1] for p in tree if p in procs)


def _machine_cpu_s() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine (all cores), from /proc/stat: steal is the
    time the hypervisor gave this VM's runnable cores to someone else."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    return sum(fields[:3] + fields[5:7]) / tick, fields[7] / tick


# --- the service's /metrics, every worker ---------------------------------------------------------

Sample = tuple[str, tuple[tuple[str, str], ...]]


def _scrape_once(url: str) -> dict[Sample, float]:
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", timeout=10).text  # a new connection each time: any worker may answer
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for fam in text_string_to_metric_families(text) for s in fam.samples}


def _workers_metrics(url: str, workers: int, tries: int = 80) -> list[dict[Sample, float]]:
    """One snapshot per worker: scrape until `workers` distinct ones are seen (a worker is known by
    its series other than /metrics' own, which every scrape changes)."""
    seen: dict[tuple[Any, ...], dict[Sample, float]] = {}
    for _ in range(tries):
        snap = _scrape_once(url)
        key = tuple(sorted((k, v) for k, v in snap.items() if ("route", "/metrics") not in k[1]))
        seen[key] = snap
        if len(seen) >= workers:
            break
    return list(seen.values())


def _merged_delta(before: list[dict[Sample, float]], after: list[dict[Sample, float]]) -> dict[Sample, float]:
    """Sum over workers after minus sum over workers before (a worker's pairing does not matter)."""
    out: dict[Sample, float] = {}
    for snaps, sign in ((after, 1.0), (before, -1.0)):
        for snap in snaps:
            for k, v in snap.items():
                if not k[0].endswith("_created"):
                    out[k] = out.get(k, 0.0) + sign * v
    return out


def _per_worker(before: list[dict[Sample, float]], after: list[dict[Sample, float]], path: str) -> list[int]:
    """Requests to `path` each worker answered in between, a worker known by when its series were
    created (`*_created`: per process, stable; a worker without the series has served none)."""
    def ident(snap: dict[Sample, float]) -> float | None:
        return snap.get(("querywise_request_seconds_created", (("route", path),)))

    def count(snap: dict[Sample, float]) -> float:
        return snap.get(("querywise_request_seconds_count", (("route", path),)), 0.0)

    was = {ident(b): count(b) for b in before if ident(b) is not None}
    return [int(count(a) - was.get(ident(a), 0.0)) for a in after]


def _histogram(delta: dict[Sample, float], name: str, labels: dict[str, str]) -> dict[str, Any]:
    """Count, mean and interpolated p50/p95/p99 (as Prometheus' histogram_quantile) of one histogram's delta, ms."""
    want = set(labels.items())
    buckets = sorted(((float(dict(lab)["le"]), v) for (n, lab), v in delta.items() if n == f"{name}_bucket" and want <= set(lab)), key=lambda x: x[0])
    count = sum(v for (n, lab), v in delta.items() if n == f"{name}_count" and want <= set(lab))
    total = sum(v for (n, lab), v in delta.items() if n == f"{name}_sum" and want <= set(lab))
    merged: dict[float, float] = {}
    for le, v in buckets:
        merged[le] = merged.get(le, 0.0) + v
    edges = sorted(merged.items())

    def q(p: float) -> tuple[float | None, str | None]:
        """(interpolated ms, "(lo, hi]" the bucket it falls in): only the bucket is exact."""
        if not count:
            return None, None
        rank, lo, below = p * count, 0.0, 0.0
        for le, cum in edges:
            if cum >= rank:
                if le == float("inf"):
                    return round(lo * 1000, 1), f"> {lo * 1000:g}"
                return round((lo + (le - lo) * (rank - below) / max(cum - below, 1e-9)) * 1000, 2), f"({lo * 1000:g}, {le * 1000:g}]"
            lo, below = le, cum
        return None, None

    out: dict[str, Any] = {"requests": int(count), "mean_ms": round(total / count * 1000, 2) if count else None}
    for p in (50, 95, 99):
        out[f"p{p}_ms"], out[f"p{p}_bucket_ms"] = q(p / 100)
    return out


def _moves(delta: dict[Sample, float]) -> dict[str, dict[str, float]]:
    """Mean milliseconds per plan of each move (over every plan, whatever its status), from the move histograms."""
    counts: dict[str, float] = {}
    sums: dict[str, float] = {}
    for (n, lab), v in delta.items():
        move = dict(lab).get("move")
        if move is None:
            continue
        if n == "querywise_move_seconds_count":
            counts[move] = counts.get(move, 0.0) + v
        elif n == "querywise_move_seconds_sum":
            sums[move] = sums.get(move, 0.0) + v
    return {m: {"plans": int(counts[m]), "mean_ms": round(sums.get(m, 0.0) / counts[m] * 1000, 3)} for m in sorted(counts) if counts[m]}


def _llm_counts(delta: dict[Sample, float]) -> dict[str, Any]:
    def get(name: str, **labels: str) -> float:
        return sum(v for (n, lab), v in delta.items() if n == name and set(labels.items()) <= set(lab))

    fallbacks = {dict(lab)["reason"]: int(v) for (n, lab), v in delta.items() if n == "querywise_llm_fallbacks_total" and v}
    return {"calls": int(get("querywise_llm_calls_total")), "cache_hits": int(get("querywise_llm_cache_hits_total")), "fallbacks": fallbacks,
            "moves_not_called": int(get("querywise_llm_moves_not_called_total"))}


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
    with open(logpath, "w", encoding="utf-8") as logfile:
        proc = subprocess.Popen([sys.executable, "-m", "querywise", "serve", "-c", str(config), "-i", str(INDEX), "--port", str(port),
                                 "--workers", str(workers)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=logfile)  # fmt: skip
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


# --- py-spy on the workers (optional: skipped when py-spy is not installed) ------------------------

SPY_RULES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [  # (category, path parts, functions one of which the stack must hold, or ())
    ("embedding: batching and model call", ("querywise/embed/", "onnxruntime/", "tokenizers/"), ()),
    ("move: route (and several_intents)", ("querywise/understand/route.py", "querywise/understand/classifiers.py", "querywise/understand/intents.py",
                                           "querywise/understand/calibration.py", "querywise/understand/decision.py"), ()),
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


# --- the fake LLM provider's process ---------------------------------------------------------------


def _fake_main(urls: Any, stop: Any, report: Any, ttft_s: float, tokens_per_s: float) -> None:
    import querywise.llm.fake_server as fake_server
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    late: list[float] = []

    def wait(seconds: float) -> None:
        """The fake's wait, spinning only its last millisecond: its own 20 ms spin per call would
        burn a core at this request rate on 2 cores (the server's). How late it woke is recorded."""
        deadline = time.perf_counter() + seconds
        if seconds > 0.001:
            time.sleep(seconds - 0.001)
        while time.perf_counter() < deadline:
            time.sleep(0)
        late.append(time.perf_counter() - deadline)

    fake_server._wait_precisely = wait  # the module's private helper; bench-only
    standalones = {rec["message"]: rec["standalone"] for _, rec in read_jsonl(demo_file("rewrites.jsonl"))}
    labels = _labels()

    def respond(api: str, body: dict[str, Any]) -> Any:
        fmt = body["response_format"]["json_schema"]
        message = str(body["messages"][-1]["content"]).split("Message: ", 1)[-1].split("\n\n", 1)[0]
        if fmt["name"] != "plan":
            return fake_server.Reply(output={}, input_tokens=ONE_CALL[0], output_tokens=ONE_CALL[1])
        route_schema = json.dumps(fmt["schema"].get("properties", {}).get("route", {}))
        route = labels.get(message, "kb_search") if "enum" in route_schema else None
        if route is not None and f'"{route}"' not in route_schema:
            route = "kb_search"
        return fake_server.Reply(output={"standalone": standalones.get(message), "route": route}, input_tokens=ONE_CALL[0], output_tokens=ONE_CALL[1])

    with fake_server.FakeLLMServer(ttft_s=ttft_s, tokens_per_s=tokens_per_s) as fake:
        fake.respond_with(respond)
        urls.put(fake.url)
        stop.wait()
        report.put({"requests": len(fake.requests), "late_ms": [round(x * 1000, 3) for x in late]})


@contextlib.contextmanager
def _fake_provider(ttft_s: float, tokens_per_s: float) -> Iterator[tuple[str, Any]]:
    ctx = mp.get_context("spawn")
    urls, stop, report = ctx.Queue(), ctx.Event(), ctx.Queue()
    process = ctx.Process(target=_fake_main, args=(urls, stop, report, ttft_s, tokens_per_s), daemon=True)
    process.start()
    try:
        yield urls.get(timeout=60), report
    finally:
        stop.set()
        process.join(timeout=15)
        if process.is_alive():
            process.terminate()


def _llm_config(fake_url: str) -> Path:
    """The demo's querywise.toml with its paths made absolute, `[understanding]` adding the LLM moves
    and `[llm]` the OpenAI-compatible provider at the fake."""
    from querywise.config import load_settings
    from querywise.demo import demo_file

    text = demo_file("querywise.toml").read_text(encoding="utf-8")
    for key, file in (("catalog", "catalog.jsonl"), ("examples_file", "routes.jsonl")):
        old = f'{key} = "{file}"'
        if old not in text:
            raise RuntimeError(f"the demo config has no {old!r}")
        text = text.replace(old, f"{key} = {json.dumps(str(demo_file(file)))}")
    moves = [*load_settings(demo_file("querywise.toml")).understanding.moves, "llm_rewrite", "llm_route"]
    text += ("\n# bench/service_load.py: the LLM tier at the fake provider\n[understanding]\n"
             f"moves = {json.dumps(moves)}\n\n[llm]\nprovider = \"openai\"\nmodel = \"gpt-fake\"\nbase_url = {json.dumps(fake_url + '/v1')}\n"
             f"api_key_env = \"{KEY_ENV}\"\ndefault_price = {{ usd_per_m_in = 1.0, usd_per_m_out = 5.0 }}\n")  # fmt: skip
    path = HERE / "querywise-llm.toml"
    path.write_text(text, encoding="utf-8")
    load_settings(path)  # fails here, not in the workers
    return path


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
    if q:
        path = HERE / "service_load-quick.json"
        path.write_text(json.dumps({"machine": {**machine_info(), "command": COMMAND + " --quick"}, **out}, indent=2) + "\n", encoding="utf-8")
        (HERE / "service_load-quick.md").write_text(_markdown(out, COMMAND + " --quick", machine_info()), encoding="utf-8")
    else:
        path = write_json("service_load.json", out, command=COMMAND)
        (RESULTS / "service_load.md").write_text(_markdown(out, COMMAND, machine_info()), encoding="utf-8")
    log(f"wrote {path} ({out['total_s']} s); targets met: {met}")


def _markdown(r: dict[str, Any], command: str, machine: dict[str, Any]) -> str:
    s, runs = r["setup"], r["runs"]

    def row(name: str, x: dict[str, Any]) -> str:
        L, S, C = x["latency"], x["server_side"], x["cpu_cores"]
        pace = f"{x['pace_per_user_per_s']:g}/s each ({x['offered_per_s']:g}/s offered)" if x["pace_per_user_per_s"] else "no wait (saturation)"
        return (f"| {name} | `{x['path']}` | {x['messages']} | {pace} | {x['duration_s']:g} | {x['requests']:,} | {x['failures']} | "
                f"**{x['throughput_per_s']}** | {L['p50_ms']} / **{L['p95_ms']}** / {L['p99_ms']} | {S['mean_ms']} / {S['p95_bucket_ms']} | "
                f"{x['server_cpu_ms_per_request']} | {' / '.join(map(str, S['requests_per_worker']))} | {C['server']} / {C['load_generator']} / {C['other']} / {C['steal']} |")

    llm = runs["plan_llm"]
    cm = llm["cost_model"]
    prof = r["profile"]
    lines = [
        "# The service under load (`bench/service_load.py`)", "",
        f"Command: `{command}` ({r['total_s']} s, {machine['date']})  ",
        f"Machine: {machine['cores']} cores ({machine['cpu']}), {machine['ram_gib']} GiB, Python {machine['python']}, a VM.  ",
        f"Load generator: {s['load_generator']}.  ",
        f"Service: `{s['service']}`, **{s['workers']} worker(s)** ({s['workers_chosen_by']}); {s['deployment']}; `[server]` rate limit "
        "as shipped (100/s per subject).  ",
        f"Load: {s['users']} users spawned at {s['spawn_rate']:g}/s, each with its own token (`sub` load-<i>, market eu); "
        f"{s['messages']['first_turns']} first turns and {s['messages']['follow_ups']} follow-ups with history ({s['messages']['from']}), "
        f"{s['follow_up_share']:.0%} follow-ups (the unique-message runs cycle through all of them). Paced runs: each user starts its "
        f"requests at exponential intervals of mean 1/{s['pace_per_user_per_s']:g} s (catching up when the service was slow), so about a "
        f"Poisson stream of {s['users'] * s['pace_per_user_per_s']:g} requests/s is offered (5% over the 200/s target); saturation runs: "
        "no wait.", "",
        "**The load generator shares the 2 cores with the server.** The last column says how many cores each used during the run "
        "(server processes / locust / anything else / stolen by the hypervisor, from /proc): these are the numbers of a 2-core box that "
        "is also its own client. Throughput is counted in the steady window (all users started, last second excluded). Client latency "
        "is locust's (request sent to body read). Server latency is the service's own `querywise_request_seconds` histogram, every "
        "worker scraped: its mean is exact, its p95 only known to the bucket (1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000 ms ...).", "",
        "| run | route | messages | pace | s | requests | failures | ok/s | client p50 / p95 / p99 ms | server mean ms / p95 bucket | "
        "server CPU ms per request | requests per worker | cores: server / locust / other / steal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    lines += [row(name, x) for name, x in runs.items()]
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    measured = [runs["plan"]["failures"], f"{runs['plan']['throughput_per_s']} plans/s", f"{runs['plan']['latency']['p95_ms']} ms", llm["failures"],
                f"{cm['measured_p95_ms']} ms vs {cm['predicted_p95_ms']} ms ({cm['relative_error']:+.1%})"]
    lines += [f"| {k} | {m} | {'yes' if v else '**no**'} |" for (k, v), m in zip(r["targets_met"].items(), measured, strict=True)]
    lines += [
        "", "## With the LLM tier (the fake provider at the cost model's latency)", "",
        f"`[llm]` openai (the real SDK client) at the fake provider in its own process: TTFT {cm['assumptions']['ttft_s']} s, "
        f"{cm['assumptions']['tokens_per_s']:g} tokens/s, {cm['assumptions']['one_call_tokens'][0]} in / {cm['assumptions']['one_call_tokens'][1]} "
        f"out tokens, so {cm['one_call_added_ms']} ms a call ({cm['assumptions']['source']}); moves {', '.join(s['llm']['moves'])}, "
        f"deadline {s['llm']['timeout_s']} s, single-turn cache {s['llm']['cache_size']:,} (as shipped). "
        f"{llm['share_llm_called']:.1%} of the requests called the LLM (the gate sends follow-ups and unsure routes; the first turns repeat, "
        f"so after the warm-up the cache answers them: {llm['server_side']['llm']['cache_hits']:,} cache hits, "
        f"{llm['server_side']['llm']['calls']:,} calls; fallbacks: {llm['server_side']['llm']['fallbacks'] or 'none'}).", "",
        f"- p95 measured **{cm['measured_p95_ms']} ms**, cost model **{cm['predicted_p95_ms']} ms** ({cm['relative_error']:+.1%}): "
        f"{cm['how']}; the gated model says: {cm['gated']['p95_note']}.",
        f"- The requests that called the LLM: p50 {llm['latency_llm_called'].get('p50_ms')} ms, p95 {llm['latency_llm_called'].get('p95_ms')} ms "
        f"(model: {cm['llm_called_p50_vs_model_ms']['model']} ms); the others: p50 {llm['latency_no_llm_call'].get('p50_ms')} ms, "
        f"p95 {llm['latency_no_llm_call'].get('p95_ms')} ms.",
        f"- The fake provider ({llm['fake_provider']['requests']:,} requests) woke {llm['fake_provider']['late_ms']['p50']} ms late at p50, "
        f"{llm['fake_provider']['late_ms']['p95']} ms at p95 (max {llm['fake_provider']['late_ms']['max']}): its timing error is not in the gap.", "",
        "## Where the time goes", "",
    ]  # fmt: skip
    spy = r.get("py_spy_runs") or {}
    if spy:
        cats = list(dict.fromkeys([*spy["hot"]["py_spy"]["share"], *spy.get("cold", {}).get("py_spy", {}).get("share", {})]))
        lines += [
            "py-spy (`record --gil --nonblocking -r 100`) on every worker during a saturation run of its own (py-spy slows the workers, "
            "so these runs are not in the table above): the share of the samples of the thread holding the GIL, by the innermost frame "
            "that belongs to a known owner (pydantic, json, re, numpy and threading are charged to their caller). A worker is a single "
            "Python process, so GIL-held time is its bottleneck; the model's native time (onnxruntime releases the GIL) is not sampled. "
            "ms per request = share × the server CPU ms per request of that run.", "",
            "| owner | " + " | ".join(f"{k} ({spy[k]['throughput_per_s']} ok/s, {spy[k]['py_spy']['samples']:,} samples): share / ms per request" for k in spy) + " |",
            "|---|" + "---|" * len(spy),
        ]  # fmt: skip
        for c in cats:
            lines.append(f"| {c} | " + " | ".join(f"{spy[k]['py_spy']['share'].get(c, 0):.1%} / {spy[k]['py_spy']['ms_per_request_if_cpu_follows_the_gil'].get(c, 0)}"
                                                for k in spy) + " |")
        lines += ["", "The GIL by thread: " + "; ".join(f"**{k}**: " + ", ".join(f"{t} {v:.0%}" for t, v in spy[k]["py_spy"]["threads"].items()) for k in spy)
                  + ". Each /v1/plan request crosses from the event loop to the thread pool once, for the sync endpoint (the dependencies "
                  "are async; the middlewares pure ASGI; uvicorn runs on uvloop with the httptools parser).", ""]
        lines += ["Functions most often on top (hot): " + "; ".join(f"`{t['function']}` {t['share']:.1%}" for t in spy["hot"]["py_spy"]["top_leaf_functions"][:8])
                  + ".", ""]
    moves_cols = list(prof["cold"]["moves_ms_mean_per_plan"])
    lines += [
        "In process, one request at a time (`QueryWise.plan` of the demo deployment with the serving embedder, no HTTP): *hot*, the "
        "message's embedding in the worker's LRU (the demo-message runs repeat messages); *cold*, every message unique. Mean ms per plan "
        "of each move (its trace latency):", "",
        "| | plan mean / p50 / p95 ms | texts embedded per plan | " + " | ".join(moves_cols) + " | response JSON ms |",
        "|---|---|---|" + "---|" * len(moves_cols) + "---|",
    ]  # fmt: skip
    for phase in ("hot", "cold"):
        x = prof[phase]
        cells = " | ".join(str(x["moves_ms_mean_per_plan"].get(m, "–")) for m in moves_cols)
        lines.append(f"| {phase} | {x['plan_ms']['mean']} / {x['plan_ms']['p50']} / {x['plan_ms']['p95']} | {x['embedding']['texts_per_plan']} | {cells} | "
                     f"{x['response_json_ms_mean']} |")
    lines += ["", f"One text through the model alone (no batching thread): {prof['one_text_model_call_ms']['p50']} ms p50. Top own time, cold, ms per plan: "
              + "; ".join(f"`{t['function']}` {t['tottime_ms_per_plan']}" for t in prof["cold"]["top_tottime"][:6]) + ".", "",
              "Under load, server side (`querywise_move_seconds`, mean ms per plan, including the waits for the GIL and for the embedding batch):", ""]
    for name in ("plan", "plan_unique_messages", "plan_llm"):
        lines.append(f"- {name}: " + ", ".join(f"{m} {v['mean_ms']}" for m, v in runs[name]["server_side"]["moves"].items()))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
