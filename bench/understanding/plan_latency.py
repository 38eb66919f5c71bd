"""Routing and planning latency without an LLM, on the demo deployment.

    python -m bench.understanding.plan_latency [--n 1000]

Messages: real user requests (CLINC150 test, in-scope and out-of-scope, read at run time) mixed
with the demo's own messages. Routing is timed twice: the decision alone from a precomputed query
vector, and including embedding that query (no embedding cache). Planning runs every
deterministic move (access, follow-up, route, filters, spelling, ambiguity) with the demo index's
vocabulary; half the messages carry a previous turn so the follow-up gate works too. Apart: the
follow-ups of the development passage conversations (bench/understanding/dialogues_passages_dev.jsonl)
whose history holds an assistant's answer, where the default also runs the learnt word choice
(`understand/followup/choice.py`: its phrases embedded, its trees walked).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import WORK, datasets, percentiles
from bench.report import write_json


def _messages(n: int) -> list[str]:
    from querywise.demo import demo_file
    from querywise.files import read_jsonl

    own = [rec["message"] for _, rec in read_jsonl(demo_file("cases.jsonl"))]
    own += [rec["text"] for _, rec in read_jsonl(demo_file("routes_test.jsonl"))]
    real, _ = datasets.clinc150_texts(datasets.clinc150(), "test", "oos_test")
    rng = np.random.default_rng(7)
    picked = [real[i] for i in rng.choice(len(real), size=max(0, n - len(own)), replace=False)]
    return (own + picked)[:n]


def _answered_follow_ups() -> list[Any]:
    from querywise.evaluation.rewrites import load_rewrite_rows
    from querywise.understand.followup.choice import answered_before

    rows = load_rewrite_rows(Path(__file__).with_name("dialogues_passages_dev.jsonl"))
    return [row for row in rows if answered_before(row.history)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()

    from querywise.config import load_settings
    from querywise.demo import demo_corpus, demo_file
    from querywise.embed import DEFAULT_KIND, load_embedder
    from querywise.index import build_index
    from querywise.service import QueryWise

    settings = load_settings(demo_file("querywise.toml"))
    cached = load_embedder(DEFAULT_KIND, cache_dir=settings.cache_dir / "embeddings")
    uncached = load_embedder(DEFAULT_KIND, cache_dir=None)
    index = build_index(demo_corpus(), WORK / "latency-demo-index", settings=settings, embedder=cached)
    qw = QueryWise(settings, index, embedder=uncached)
    router = qw.understander.router
    messages = _messages(args.n)
    vectors = np.asarray(cached.embed(messages), dtype=np.float32)
    for m in messages[:20]:  # warm up lazy imports and caches
        qw.plan(m, session={"market": "eu"})

    decision, with_embedding, plan = [], [], []
    today = dt.date(2026, 11, 29)
    for i, m in enumerate(messages):
        t = time.perf_counter()
        router.route(m, vector=vectors[i])
        decision.append(time.perf_counter() - t)
        t = time.perf_counter()
        router.route(m)
        with_embedding.append(time.perf_counter() - t)
        history = [messages[i - 1]] if i % 2 else []
        t = time.perf_counter()
        qw.plan(m, history=history, session={"market": "eu"}, today=today)
        plan.append(time.perf_counter() - t)
    answered, rows = [], _answered_follow_ups()
    for row in rows[:3]:  # warm up the word choice's model
        qw.plan(row.message, history=row.history, session={"market": "eu"}, today=today)
    for row in rows:
        t = time.perf_counter()
        qw.plan(row.message, history=row.history, session={"market": "eu"}, today=today)
        answered.append(time.perf_counter() - t)
    qw.close()
    index.close()
    result = {
        "n_messages": len(messages),
        "classifier": type(router.classifier).__name__,
        "route_decision_excluding_embedding": percentiles(decision),
        "route_including_embedding": percentiles(with_embedding),
        "plan_all_moves_including_embedding": percentiles(plan),
        "plan_follow_up_after_an_answer": percentiles(answered),
        "targets": {"route_p95_ms_excluding_embedding": 5, "route_p95_ms_including_embedding": 15},
    }
    write_json("latency.json", result, command=f"python -m bench.understanding.plan_latency --n {args.n}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
