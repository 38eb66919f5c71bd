"""Bounded time per request: crafted messages at 1, 10 and 100 KB through every move.

    python -m bench.understanding.crafted_inputs [--repeats 3]

Each kind of input repeats one unit up to the size: identifiers (`"ET-"*n`, `"HC-3417 "*n`),
digit runs, `"1,"*n` separators, nesting (`"("*n`), one long word, repeated catalog names,
unicode, and inputs that broke a move before issue #12 (quotes, typos, prices, "what does a"
plus a run of spaces, a run of "and"). Every message comes with one history turn of the same
kind and size. The demo deployment (`src/querywise/demo/querywise.toml`) plans them over a
demo index, with the message and turn limits of `[limits]` raised so that 100 KB passes (the
defaults reject anything over 4,000 characters) and every route searching, so that every move
runs whatever the router decides. The rewrite guard keeps its default limit in the plan (a
deterministic rewrite longer than 10,000 characters is rejected unread); `guard` times
`check_rewrite` on the whole of the message, the rewrite (previous turn + message) and the
turn, with no limit, to show the guard itself is linear.

Per move: the latency the plan's trace step records (median over `--repeats`). `route`
includes embedding the message (the embedder truncates to 256 tokens, but tokenises the whole
text first); `embed` is that embedding alone, and `plan - embed` is the plan without it. `search`
is `QueryWise.search` of the raw message (BM25 analysis + dense + fusion), outside the plan.
Targets: every move <= 50 ms and a plan (embedding excluded) <= 200 ms at 100 KB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from typing import Any

from bench import WORK, log
from bench.report import write_json

SIZES = (1_000, 10_000, 100_000)
KINDS: dict[str, str] = {
    "identifiers ET-": "ET-",
    "identifiers HC-3417": "HC-3417 ",
    "digits": "1",
    "separators 1,": "1,",
    "nesting (": "(",
    "long word": "a",
    "catalog names": "Halden Solace 7 Pro ",
    "unicode": "Ｃaﬁ Résumé naïve ",
    "quotes": "'a ",
    "typos": "warrenty on the it ",
    "prices": "under $1 ",
    "what does a + spaces": "what does a" + " " * 60,
    "and": "and ",
}
MOVES = ("follow_up", "route", "filters", "spelling", "ambiguity")
EXTRA = ("plan", "embed", "route_decision", "search", "guard")
TARGET_MOVE_MS, TARGET_PLAN_MS = 50.0, 200.0


def _text(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _median(xs: list[float]) -> float:
    return round(statistics.median(xs), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from querywise.checks.guard import check_rewrite
    from querywise.config import LimitsSettings, load_settings
    from querywise.demo import demo_corpus, demo_file
    from querywise.embed import DEFAULT_KIND, load_embedder
    from querywise.index import build_index
    from querywise.service import QueryWise
    from querywise.understand.followup import concat_standalone
    from querywise.understand.limits import LimitError

    demo = load_settings(demo_file("querywise.toml"))
    raised = LimitsSettings(max_message_chars=200_000, max_turn_chars=200_000)
    every_route_searches = [r.model_copy(update={"search": True}) for r in demo.routing.routes]
    settings = demo.model_copy(update={"limits": raised, "routing": demo.routing.model_copy(update={"routes": every_route_searches})})
    embedder = load_embedder(DEFAULT_KIND, cache_dir=settings.cache_dir / "embeddings")
    uncached = load_embedder(DEFAULT_KIND, cache_dir=None)
    index = build_index(demo_corpus(), WORK / "adversarial-demo-index", settings=settings, embedder=embedder)
    today, session = dt.date(2026, 11, 29), {"market": "eu"}

    with QueryWise(settings, index, embedder=uncached) as qw, QueryWise(demo, index, embedder=uncached) as default:
        qw.plan("warm up: does it fold?", history=["Aero X2 specs"], session=session, today=today)
        try:  # the defaults reject a 100 KB message before any move reads it
            default.plan(_text("ET-", 100_000), session=session, today=today)
            rejected = None
        except LimitError as exc:
            rejected = str(exc)

        rows: list[dict[str, Any]] = []
        for kind, unit in KINDS.items():
            for size in SIZES:
                message = _text(unit, size)
                history = [_text(unit, size)]
                runs: dict[str, list[float]] = {m: [] for m in (*MOVES, *EXTRA, "embedded")}
                for _ in range(args.repeats):
                    t = time.perf_counter()
                    plan = qw.plan(message, history=history, session=session, today=today)
                    runs["plan"].append((time.perf_counter() - t) * 1000)
                    steps = {s.move: s.latency_ms for s in plan.trace}
                    route = next(s for s in plan.trace if s.move == "route")
                    runs["embedded"].append(0.0 if route.routing is not None and route.routing.source == "rule" else 1.0)
                    for move in MOVES:
                        runs[move].append(steps.get(move, 0.0))
                    t = time.perf_counter()
                    vector = uncached.embed([message])[0]
                    runs["embed"].append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    qw.understander.router.route(message, vector=vector)
                    runs["route_decision"].append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    qw.search(message, session=session, k=10)
                    runs["search"].append((time.perf_counter() - t) * 1000)
                    t = time.perf_counter()
                    check_rewrite(message, concat_standalone(message, history), history, catalog=qw.understander.catalog, max_chars=10**9)
                    runs["guard"].append((time.perf_counter() - t) * 1000)
                row: dict[str, Any] = {"kind": kind, "kb": size // 1000, **{m: _median(v) for m, v in runs.items()}}
                # A routing rule decides without embedding the message; otherwise the route step embeds it
                # once, and the embedding in the plan is the route step less the decision from a vector.
                embedded = row.pop("embedded") > 0
                in_plan = max(0.0, row["route"] - row["route_decision"]) if embedded else 0.0
                row["route_minus_embed"] = round(row["route"] - in_plan, 2)
                row["plan_minus_embed"] = round(row["plan"] - in_plan, 2)
                rows.append(row)
                log(f"{kind:22s} {size // 1000:>3} KB " + " ".join(f"{m} {row[m]:.1f}" for m in (*MOVES, *EXTRA)))
    index.close()

    at100 = [r for r in rows if r["kb"] == 100]
    moves_ex_embed = ("follow_up", "route_minus_embed", "filters", "spelling", "ambiguity")
    worst = {m: max(r[m] for r in at100) for m in (*moves_ex_embed, "plan_minus_embed", "search", "guard")}
    result = {
        "sizes_kb": [s // 1000 for s in SIZES],
        "kinds": {k: repr(v) for k, v in KINDS.items()},
        "history": "one turn of the same kind and size",
        "limits": raised.model_dump(),
        "default_limits_reject_100kb": rejected,
        "repeats": args.repeats,
        "rows": rows,
        "worst_at_100kb_ms": worst,
        "targets_ms": {"move": TARGET_MOVE_MS, "plan_excluding_embedding": TARGET_PLAN_MS},
        "within_targets_at_100kb": {
            "every_move": all(worst[m] <= TARGET_MOVE_MS for m in moves_ex_embed),
            "plan": worst["plan_minus_embed"] <= TARGET_PLAN_MS,
        },
        "markdown": _markdown(rows),
    }
    write_json("adversarial.json", result, command=f"python -m bench.understanding.crafted_inputs --repeats {args.repeats}")
    print(json.dumps({k: v for k, v in result.items() if k not in ("rows", "markdown")}, indent=2))
    print(result["markdown"])


def _markdown(rows: list[dict[str, Any]]) -> str:
    head = "| input | KB | follow_up | route (embed) | filters | spelling | ambiguity | plan | plan − embed | search | guard, no limit |"
    lines = [
        "Median ms per move (the plan's trace), one history turn of the same kind and size, every `[limits]` raised. "
        "`route` includes embedding the message (not when an identifier rule routes it; `embed`, in brackets, is "
        "that embedding timed on its own), and `plan − embed` is the plan without it (the route step less the routing "
        "decision from a precomputed vector). `search`: `QueryWise.search` of the raw message. `guard, no limit`: "
        "`check_rewrite` of the message, previous turn + message and the turn with no length limit (in the plan, a rewrite over "
        "10,000 characters is rejected unread). A 0.0 follow-up: the gate's answer for a message past 4,000 characters "
        "(it stands alone).",
        "",
        head,
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['kb']} | {r['follow_up']:.1f} | {r['route']:.1f} ({r['embed']:.1f}) | {r['filters']:.1f} | "
            f"{r['spelling']:.1f} | {r['ambiguity']:.1f} | {r['plan']:.1f} | {r['plan_minus_embed']:.1f} | {r['search']:.1f} | {r['guard']:.1f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
