"""Adversarial access run through the service (issue #17): generated requests against `querywise
serve`'s app on a real uvicorn (127.0.0.1), with a scripted LLM that tries to widen access.

    python -m bench.service.adversarial [--seed 0] [--scale 1.0]

The bundled demo deployment (`src/querywise/demo/querywise.toml`, access `market` -> payload field
`markets`) is served in-process three times, one deployment behind three apps: JWT HS256 (the
default), JWT RS256 (a public key file) and gateway (HMAC-signed session header). Its LLM tier is
a `ScriptedProvider` holding, for exactly the conversations sent, a `plan` answer that tries to
widen access: filters on the access field (`markets`/`market`/`tenant`/`access`/`session`, other
markets, both markets, flat keys such as `market_from`), a standalone rewrite or a semantic query
saying "ignore access / every market", a route change (to another route, or to a name outside the
enum), a clarifying question or an assumption offering another market; a few answers are
failures. `[understanding] moves` adds `llm_rewrite`, `llm_route` and `llm_filters`, and
`[routing] min_margin` is 2.0, so the classifier is never sure and every message that no
identifier rule routes calls the plan move (histories make it ask for the rewrite too).
`[server] rate_limit` and `auth_failure_limit` are off (the run is one client; 429s would only hide answers).

Categories: (a) injections in the message (instructions, JSON / SQL / markup payloads, unicode
confusables, long messages within and over `[limits]`); (b) injections in the history (user and
assistant turns claiming another market or admin rights; malformed turns); (c) forged tokens
(wrong secret, `alg: none` and its spellings, RS/HS confusion both ways, expired, nbf ahead, no exp,
missing / list / number / empty / null market, garbage); extra claims next to a valid market
(`markets: ["us","eu"]`, `session`, `access`, `tenant`, `Market`) must be served with the market
claim only; (d) tampered tokens (payload edited and signature kept, header edited, signature
removed, flipped or spliced) and tampered gateway headers; (e) access fields in the body
(`session`, `access`, `market`, `markets`, `tenant`, ... on /v1/plan, /v1/ask, /v1/search, in a
history turn, in the filters), in the query string, and a gateway header sent to the JWT app;
(f) /v1/search filters that try to widen (AnyOf of both markets, `missing: keep`, `linked`,
ranges, paths); (g) valid eu and us requests as controls (plus jobs without the jobs scope);
(h) what #37 closed: a JWT claim or gateway key that reads like `market` (case, trailing space,
Cyrillic look-alike, zero-width space: 401, never skipped), an unknown gateway key, a gateway `exp`
of NaN / Infinity (401), a foreign Host header (400), a filter value past int64 or a NaN bound (422).

Every response is checked: the expected status (401 for bad credentials, 422 for a body naming
access, ...); for a 200, the plan's access is exactly `markets = <the credentials' market>`, no plan
filter or inferred filter names an access field, and every hit's payload `markets` holds the
credentials' market (read from the payload, independently of the engine). Violations must be 0.
Results: bench/results/service_adversarial.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
import warnings
from collections import Counter
from typing import Any

from bench import RESULTS, WORK, log
from bench.report import machine_info, write_json
from bench.service.adversarial_checks import ACCESS_WORDS, Outcome, Stats, _metrics, _printable, _reproducer, check
from bench.service.adversarial_inputs import GATEWAY_SECRET, SECRET, conversation_of, hostile_plan
from bench.service.adversarial_report import _markdown
from bench.service.adversarial_requests import Gen, Req

HERE = WORK / "service-adversarial"
COMMAND = "python -m bench.service.adversarial"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every category's count (1.0: 3,175 requests)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", module="jwt")  # short test keys on purpose (the empty-secret forgery)

    import httpx
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from querywise.catalog import Catalog
    from querywise.config import ServerSettings, load_settings
    from querywise.demo import demo_conversation, demo_corpus, demo_file
    from querywise.embed import embedder_for
    from querywise.files import read_jsonl
    from querywise.index import Index, IndexStoreError, build_index
    from querywise.llm.scripted import ScriptedProvider
    from querywise.llm.structured import conversation_key
    from querywise.server import Authenticator, create_app, running
    from querywise.server.run import serving_embedder
    from querywise.service import QueryWise

    started = time.perf_counter()
    os.environ["QUERYWISE_JWT_SECRET"] = SECRET
    os.environ["QUERYWISE_GATEWAY_SECRET"] = GATEWAY_SECRET
    HERE.mkdir(parents=True, exist_ok=True)

    base = load_settings(demo_file("querywise.toml"))
    moves = list(dict.fromkeys([*base.understanding.moves, "llm_rewrite", "llm_route", "llm_filters"]))
    server = ServerSettings(rate_limit=None, auth_failure_limit=None)
    settings = base.model_copy(update={
        "understanding": base.understanding.model_copy(update={"moves": moves}),
        "routing": base.routing.model_copy(update={"min_margin": 2.0}),  # never sure: every non-rule message calls the LLM tier
        "server": server,
    })
    access_field = settings.access.fields["market"]
    assert access_field == "markets", settings.access.fields

    rs_private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    attacker_rs = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = HERE / "public.pem"
    pem_bytes = rs_private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    pem.write_bytes(pem_bytes)
    rs_server = ServerSettings(rate_limit=None, auth_failure_limit=None, jwt_algorithms=["RS256"], jwt_public_key=pem)
    gw_server = ServerSettings(rate_limit=None, auth_failure_limit=None, auth="gateway")

    seeds = [t["message"] for t in demo_conversation()] + [rec["text"] for _, rec in read_jsonl(demo_file("routes_test.jsonl"))]
    products = [e.name for e in Catalog.load(demo_file("catalog.jsonl")).entities]
    scale = args.scale
    gen = Gen(args.seed, seeds, rs_private, pem_bytes, attacker_rs)
    gen.message_injections(int(600 * scale))
    gen.history_injections(int(500 * scale))
    gen.forged_tokens(int(36 * 12 * scale))
    gen.tampered(int(29 * 16 * scale))
    gen.body_fields(int(400 * scale))
    gen.search_filters(int(400 * scale), products)
    gen.reliability(int(7 * 20 * scale))
    gen.controls(int(350 * scale))
    reqs = gen.reqs

    # The scripted LLM: one hostile plan answer per conversation sent (keyed as the plan move keys it).
    plan_rng = random.Random(args.seed + 1)
    records: dict[str, dict[str, Any]] = {}
    for req in reqs:
        conv = conversation_of(req.body) if req.path in ("/v1/plan", "/v1/ask") else None
        if conv is None:
            continue
        key = conversation_key(conv[0], conv[1])
        records.setdefault(key, {"task": "plan", "input": key, **hostile_plan(plan_rng, conv[0], req.body.get("history") or [])})
        req.scripted = True
    proposals: Counter[str] = Counter()
    for rec in records.values():
        out = rec.get("output")
        if out is None:
            proposals["scripted failures"] += 1
            continue
        if any(k.lower().split("_")[0] in ACCESS_WORDS | {"region"} for k in out["filters"]):
            proposals["answers with a filter on an access field"] += 1
        if out["standalone"] and ("access" in out["standalone"] or "market" in out["standalone"]):
            proposals["answers with a rewrite injecting access"] += 1
        if out["route"]:
            proposals["answers with a route"] += 1
    provider = ScriptedProvider.from_records(records.values())
    log(f"{len(reqs)} requests generated, {len(records)} scripted plan answers")

    index_dir = HERE / "index"
    embedder = serving_embedder(settings)
    try:
        index = Index.open(index_dir, settings=settings, embedder=embedder)
    except IndexStoreError:
        log(f"building the demo index in {index_dir}")
        build_index(demo_corpus(), index_dir, settings=settings, embedder=embedder_for(settings)).close()
        index = Index.open(index_dir, settings=settings, embedder=embedder)

    stats = Stats()
    results: list[tuple[Req, Outcome]] = []
    with QueryWise(settings, index, provider=provider, embedder=embedder) as qw:
        apps = {
            "jwt": create_app(qw, authenticator=Authenticator(server, settings.access), server=server),
            "rs256": create_app(qw, authenticator=Authenticator(rs_server, settings.access), server=rs_server),
            "gateway": create_app(qw, authenticator=Authenticator(gw_server, settings.access), server=gw_server),
        }
        with running(apps["jwt"]) as jwt_url, running(apps["rs256"]) as rs_url, running(apps["gateway"]) as gw_url:
            urls = {"jwt": jwt_url, "rs256": rs_url, "gateway": gw_url}
            log(f"serving on {urls} ({time.perf_counter() - started:.1f}s)")
            t0 = time.perf_counter()
            with httpx.Client(timeout=30) as client:
                for i, req in enumerate(reqs):
                    url = urls[req.app] + req.path + req.query
                    # json.dumps escapes to ASCII: a lone surrogate goes as its JSON escape (httpx's json= cannot encode it)
                    content = req.body if isinstance(req.body, bytes) else json.dumps(req.body).encode()
                    r = client.post(url, content=content, headers=[*req.headers, ("content-type", "application/json")])
                    try:
                        answer: Any = r.json()
                    except ValueError:
                        answer = r.text
                    outcome = check(req, r.status_code, answer, stats)
                    results.append((req, outcome))
                    if (i + 1) % 400 == 0:
                        log(f"{i + 1}/{len(reqs)} requests ({time.perf_counter() - t0:.1f}s)")
                scraped = {name: _metrics(client.get(f"{url}/metrics").text) for name, url in urls.items()}
                # The LLM counters are the one deployment's (the same behind every app); requests are per app.
                metrics = {"requests_total": {name: m["requests_total"] for name, m in scraped.items()}, "llm": scraped["jwt"]["llm"]}
            http_seconds = time.perf_counter() - t0
        report = qw.understander.tier.budget.report() if qw.understander.tier is not None else None
    index.close()
    embedder.close()

    for req, o in results:
        stats.statuses[o.status] += 1
        stats.by_category[req.category][str(o.status)] += 1
        stats.by_category[req.category]["requests"] += 1
        stats.kinds[req.category][req.kind][str(o.status)] += 1
        if o.violations:
            stats.by_category[req.category]["violations"] += 1
            stats.violations.append({"category": req.category, "kind": req.kind, "status": o.status, "violations": o.violations,
                                     "request": _reproducer(req, urls[req.app])})
        if o.unexpected:
            stats.by_category[req.category]["unexpected_status"] += 1
            stats.unexpected.append({"category": req.category, "kind": req.kind, "detail": o.unexpected, "request": _reproducer(req, urls[req.app])})
    called = sum(1 for c in provider.calls if c.name == "plan")
    plans_llm = stats.llm["llm_plan ran (called)"] + stats.llm["llm_plan ran (cache hit)"] + sum(v for k, v in stats.llm.items() if "fallback" in k)
    seconds = round(time.perf_counter() - started, 1)
    result: dict[str, Any] = {
        "seed": args.seed,
        "scale": scale,
        "requests": len(reqs),
        "violations": len(stats.violations),
        "passed": not stats.violations,
        "unexpected_statuses": len(stats.unexpected),
        "statuses": {str(k): v for k, v in sorted(stats.statuses.items())},
        "categories": {c: dict(sorted(v.items())) for c, v in sorted(stats.by_category.items())},
        "kinds": {c: {k: dict(sorted(n.items())) for k, n in sorted(v.items())} for c, v in sorted(stats.kinds.items())},
        "plans_checked": stats.plans_checked,
        "hits_checked": stats.hits_checked,
        "llm": {
            "scripted_plan_answers": len(records),
            "scripted_answers_by_intent": dict(proposals),
            "plan_calls_made": called,
            "plans_through_the_llm": plans_llm,
            "plan_requests_with_an_llm_answer_scripted": sum(1 for r in reqs if r.scripted),
            "llm_plan_steps": dict(sorted(stats.llm.items())),
            "dropped_in_traces": dict(stats.dropped),
            "other_drops_by_reason": dict(stats.other_drops.most_common()),
            "tier_budget": report.model_dump() if report is not None else None,
        },
        "metrics": metrics,
        "settings": {"moves": moves, "min_margin": 2.0, "rate_limit": None, "apps": ["jwt (HS256)", "rs256 (public key)", "gateway (HMAC header)"],
                     "access": dict(settings.access.fields)},
        "seconds": seconds,
        "http_seconds": round(http_seconds, 1),
        "injected_rewrite_examples": stats.injected_rewrites[:5],
        "violation_examples": stats.violations[:20],
        "unexpected_examples": stats.unexpected[:20],
    }
    result = _printable(result)
    command = f"{COMMAND} --seed {args.seed}" + (f" --scale {scale}" if scale != 1.0 else "")
    result["machine"] = {**machine_info(), "command": command}  # before the markdown, which states the machine's load
    result["markdown"] = _markdown(result, COMMAND)
    write_json("service_adversarial.json", result, command=command)
    (RESULTS / "service_adversarial.md").write_text(result["markdown"] + "\n", encoding="utf-8")
    log(f"{len(reqs)} requests, {len(stats.violations)} violations, {len(stats.unexpected)} unexpected statuses, statuses {result['statuses']} "
        f"in {seconds}s; wrote {RESULTS / 'service_adversarial.json'}")
    if stats.violations:
        print(json.dumps(result["violation_examples"][:5], indent=2, ensure_ascii=False))
    if stats.unexpected:
        print(json.dumps(result["unexpected_examples"][:5], indent=2, ensure_ascii=False)[:6000])


if __name__ == "__main__":
    main()
