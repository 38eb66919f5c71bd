"""Issue 6: the LLM tier against the reference help centre.

A scripted provider holds the reference's standalone rewrites, variants, hypothetical answers,
step-back question and extracted self-query plan (written at run time from the reference file),
and the REAL pipeline (Understander -> execute) reproduces the reference's ranks and results.
`querywise cost` reproduces the reference cost model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from querywise.cli import app
from querywise.config import (
    AccessSettings,
    DeploymentSettings,
    FilterField,
    FilterSettings,
    RouteSpec,
    RoutingSettings,
    Settings,
    UnderstandingSettings,
)
from querywise.corpus import Chunk
from querywise.execute import PlanResult, execute
from querywise.index import Index, build_index
from querywise.llm.scripted import ScriptedProvider
from querywise.llm.structured import conversation_key
from querywise.understand.pipeline import Understander

# The default moves (exact lookup and several intents included: what a default user runs), plus the LLM's.
PLAN_MOVES = [*UnderstandingSettings().moves, "llm_rewrite", "llm_route"]


def _settings(reference: dict[str, Any], moves: list[str], **extra: Any) -> Settings:
    routes = [RouteSpec(name=name, examples=examples, search=name == "kb_search") for name, examples in reference["route_examples"].items()]
    # The reference's router: centroids, margin gate 0.05; unsure messages go to the LLM tier.
    return Settings(
        routing=RoutingSettings(routes=routes, classifier="centroid", min_margin=0.05),
        understanding=UnderstandingSettings(moves=moves),  # type: ignore[arg-type]
        **extra,
    )


def _records(reference: dict[str, Any]) -> list[dict[str, Any]]:
    """The scripted responses: the reference's LLM outputs, keyed by the input they answer."""
    e = reference["expected"]
    recs = [{"task": "plan", "input": conversation_key(f["message"], f["history"]), "output": {"standalone": f["standalone"]}}
            for f in reference["follow_ups"]]  # fmt: skip
    mq = e["multi_query_rrf"]
    recs.append({"task": "multi_query", "input": mq["query"], "output": {"variants": mq["variants"]}})
    recs += [{"task": "hyde", "input": h["question"], "output": {"passage": h["hypothetical"]}} for h in e["hyde"]]
    sb = e["step_back"]
    recs.append({"task": "step_back", "input": sb["query"], "output": {"question": sb["step_back_query"]}})
    # First turns the centroid router is unsure about: the unsure-route tier answers kb_search.
    for m in [mq["query"], sb["query"], *(h["question"] for h in e["hyde"])]:
        recs.append({"task": "plan", "input": m, "output": {"route": "kb_search"}})
    return recs


@pytest.fixture(scope="module")
def provider(reference: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider.from_records(_records(reference))


def _rank(ids: list[str], gold: str) -> int | None:
    return ids.index(gold) + 1 if gold in ids else None


def test_follow_up_ranks_with_the_scripted_rewrites(reference: dict[str, Any], reference_index: Index, embedder: Any, provider: ScriptedProvider,
                                                    reference_catalog: Path) -> None:
    # the default user's deployment: its catalog (model names, part numbers) read by the default moves
    u = Understander(_settings(reference, PLAN_MOVES, deployment=DeploymentSettings(catalog=reference_catalog)), embedder=embedder, provider=provider)
    ranks = []
    for f in reference["follow_ups"]:
        plan = u.plan(f["message"], history=f["history"])
        step = plan.step("llm_plan")
        assert step is not None and step.status == "ran", (f["message"], step)
        assert [(q.text, q.kind) for q in plan.queries] == [(f["standalone"], "standalone")]  # passed the guard
        ids = [h.id for h in execute(plan, reference_index, k=len(reference_index), mode="dense").hits]
        ranks.append(_rank(ids, f["relevant"]))
    assert ranks == reference["expected"]["follow_up_ranks"]["standalone rewrite"] == [1, 1, 1, 2, 1, 1, 1, 1]
    report = u.tier.budget.report()
    assert report.calls == 8 and report.fallbacks == {}


def _run(reference: dict[str, Any], index: Index, embedder: Any, provider: ScriptedProvider, move: str, message: str, *, k: int, depth: int) -> PlanResult:
    u = Understander(_settings(reference, [*PLAN_MOVES, move]), embedder=embedder, provider=provider)
    plan = u.plan(message)
    assert plan.route == "kb_search" and plan.queries[0].text == message and plan.queries[0].kind == "original"
    assert plan.step(move).status == "ran", plan.step(move)  # type: ignore[union-attr]
    return execute(plan, index, k=k, mode="dense", depth=depth)


def test_multi_query_rrf_fused_top5(reference: dict[str, Any], reference_index: Index, embedder: Any, provider: ScriptedProvider) -> None:
    mq = reference["expected"]["multi_query_rrf"]
    result = _run(reference, reference_index, embedder, provider, "multi_query", mq["query"], k=5, depth=10)  # "depth 10"
    assert [q.text for q in result.plan.queries] == [mq["query"], *mq["variants"]]  # the original always searched
    assert result.per_query[0].ids[:5] == mq["original_top5"]
    assert [h.id for h in result.hits] == mq["fused_top5"]
    assert round(result.hits[0].score, 4) == 0.0645 and round(result.hits[3].score, 4) == 0.0623  # "about 0.0645 / 0.0623"


def test_hyde_ranks(reference: dict[str, Any], reference_index: Index, embedder: Any, provider: ScriptedProvider) -> None:
    n = len(reference_index)
    for row in reference["expected"]["hyde"]:
        result = _run(reference, reference_index, embedder, provider, "hyde", row["question"], k=n, depth=n)
        (orig, hyp) = result.per_query
        assert (hyp.query.kind, hyp.query.mode, hyp.query.text) == ("hyde", "dense", row["hypothetical"])
        assert _rank(orig.ids, row["gold"]) == row["question_rank"]
        assert _rank(hyp.ids, row["gold"]) == row["hyde_rank"]
        assert hyp.ids[0] == row["hyde_top"][0]
        # Searched next to the question, fused: never worse than the question's own rank here.
        assert _rank([h.id for h in result.hits], row["gold"]) <= row["question_rank"]  # type: ignore[operator]


def test_step_back_ranks(reference: dict[str, Any], reference_index: Index, embedder: Any, provider: ScriptedProvider) -> None:
    sb = reference["expected"]["step_back"]
    n = len(reference_index)
    result = _run(reference, reference_index, embedder, provider, "step_back", sb["query"], k=n, depth=n)
    (orig, back) = result.per_query
    assert back.query.kind == "step_back" and back.query.text == sb["step_back_query"]
    assert _rank(orig.ids, sb["gold"]) == sb["query_rank"]
    assert _rank(back.ids, sb["gold"]) == sb["step_back_rank"] and back.ids[1] == sb["step_back_second"]


def test_self_query_from_the_extracted_plan(reference: dict[str, Any], embedder: Any, tmp_path: Path) -> None:
    sq = reference["expected"]["self_query"]
    catalog_file = tmp_path / "catalog.jsonl"
    catalog_file.write_text("".join(json.dumps(p) + "\n" for p in reference["catalog"]), encoding="utf-8")
    settings = _settings(
        reference,
        ["follow_up", "spelling", "ambiguity", "llm_filters"],  # filters by the LLM, checked by the validator
        deployment=DeploymentSettings(catalog=catalog_file),
        filters=FilterSettings(fields={
            "category": FilterField(type="enum", catalog_field="category"),
            "brand": FilterField(type="enum", catalog_field="brand"),
            "price_usd": FilterField(type="number", min=0, unit="usd", aliases=["price"]),
            "released": FilterField(type="integer", min=1990, max=2100, aliases=["released", "year"]),
        }),
        access=AccessSettings(fields={"market": "markets"}),
    )  # fmt: skip
    provider = ScriptedProvider.from_records([{"task": "plan", "input": sq["user_query"], "output": sq["extracted"]}])
    u = Understander(settings, embedder=embedder, provider=provider)
    plan = u.plan(sq["user_query"], session={"market": sq["session_market"]})
    step = plan.step("llm_plan")
    assert step is not None and step.status == "ran"
    assert [d.split("=")[0] for d in step.details["dropped"]] == [f for f, _ in sq["dropped"]]  # the market: from the session only
    assert [(q.text, q.kind) for q in plan.queries] == [(sq["extracted"]["semantic_query"], "semantic")]
    products = [
        Chunk(id=str(p["id"]), text=f"{p['name']}. {p['description']}",
              payload={k: p[k] for k in ("name", "category", "brand", "price_usd", "released", "markets")})
        for p in reference["catalog"]
    ]  # fmt: skip
    with build_index(products, tmp_path / "catalog-ix", embedder=embedder) as catalog_index:
        hits = execute(plan, catalog_index, k=10, mode="dense").hits
    assert [[h.payload["name"], h.payload["price_usd"], round(h.score, 3)] for h in hits] == sq["filtered"]


def test_cost_command_reproduces_the_cost_model(reference: dict[str, Any]) -> None:
    cm = reference["expected"]["cost_model"]
    a = cm["assumptions"]
    args = ["cost", "--json", "--usd-per-m-in", str(a["usd_per_m_in"]), "--usd-per-m-out", str(a["usd_per_m_out"]),
            "--ttft", str(a["ttft_s"]), "--tokens-per-s", str(a["tokens_per_s"]),
            "--one-call", ",".join(map(str, cm["one_call"]["tokens"])), "--gated", "0.3"]  # fmt: skip
    for call in cm["three_call_chain"]["calls"]:
        args += ["--chain", ",".join(map(str, call))]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["chain"]["calls"] == cm["three_call_chain"]["calls"]
    assert (d["chain"]["added_s"], d["chain"]["usd_per_1000"]) == (cm["three_call_chain"]["added_s"], cm["three_call_chain"]["usd_per_1000"])
    assert (d["one_call"]["added_s"], d["one_call"]["usd_per_1000"]) == (cm["one_call"]["added_s"], cm["one_call"]["usd_per_1000"])
    g = cm["gated_30pct"]
    assert (d["gated"]["added_s_mean"], d["gated"]["usd_per_1000"]) == (g["added_s_mean"], g["usd_per_1000"])
    assert d["gated"]["added_s_p95"] == cm["one_call"]["added_s"] and "more than 5%" in g["p95_note"] and "more than 5%" in d["gated"]["p95_note"]
