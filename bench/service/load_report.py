"""bench/results/service_load.md from the run's result."""

from __future__ import annotations

from typing import Any

from bench.report import load_line


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
        "# The service under load (`bench/service/load.py`)", "",
        f"Command: `{command}` ({r['total_s']} s, {machine['date']})  ",
        load_line(machine)[:-1] + f"; {machine['ram_gib']} GiB, Python {machine['python']}, a VM.  ",
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
