"""Measuring a load run: the locust child process, CPU from /proc, and the service's /metrics
scraped from every worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import ROOT
from bench.service.load_setup import CLOSERS, FOLLOW_UP_SHARE, HERE, MARKET, OPENERS, SECRET, SPAWN_RATE, USERS

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
    code = "from gevent import monkey; monkey.patch_all()\nimport sys\nfrom bench.service.load_measure import _child_main\n_child_main(sys.argv[1])"
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
