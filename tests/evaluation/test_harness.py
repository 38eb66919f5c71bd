"""The harness, the ablation and the component scores on the test shop (hash embedder, real index)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from querywise.conditions import parse_where
from querywise.config import (
    AccessSettings,
    FilterField,
    FilterSettings,
    RouteSpec,
    RoutingSettings,
    Settings,
    UnderstandingSettings,
)
from querywise.corpus import Chunk
from querywise.evaluation.ablation import compare_arms, mixed_effects, plan_ablation
from querywise.evaluation.cases import Case
from querywise.evaluation.components import access_probe, component_scores
from querywise.evaluation.harness import Arm, CaseRun, JudgedIds, run_arm, summarise
from querywise.evaluation.metrics import parse_metrics
from querywise.evaluation.report import evaluate
from querywise.evaluation.result import EvalResult
from querywise.index import Index, build_index
from querywise.llm.provider import StructuredRequest, StructuredResult, Usage
from querywise.service import QueryWise

METRICS = parse_metrics(["recall@1,ndcg@10,mrr"])


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Iterator[Index]:  # type: ignore[no-untyped-def]
    ix = build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


def _case(cid: str, message: str, relevant: list[str], slices: list[str], history: list[str] | None = None) -> Case:
    return Case(id=cid, message=message, history=history or [], relevant=dict.fromkeys(relevant, 1), slices=slices)


CASES = [
    _case("warranty", "Vela X3 Pro warranty", ["x3pro-warranty"], ["standalone", "prose"]),
    _case("battery", "how long do Pico Buds play per charge", ["buds-battery"], ["standalone", "prose"]),
    _case("cushions", "QR-5126 cushions", ["cushions"], ["standalone", "identifier"]),
    _case("follow", "how fast is it", ["shipping"], ["follow_up", "prose"], ["express shipping next day"]),
    _case("nothing", "zzzz qqqq", ["returns"], ["standalone", "prose"]),
]


def test_run_arm_scores_each_case_and_each_slice(index: Index, settings: Settings) -> None:
    result = run_arm(CASES, QueryWise(settings, index), Arm(name="bm25", mode="bm25"), METRICS)
    by_id = {c.id: c for c in result.cases}
    assert by_id["warranty"].scores["recall@1"] == 1.0 and by_id["warranty"].top[0] == "x3pro-warranty"
    assert by_id["nothing"].n_hits == 0 and by_id["nothing"].scores["ndcg@10"] == 0.0
    assert result.zero_result_rate == pytest.approx(2 / 5)  # "how fast is it" has no word of the shop either
    assert result.slice_sizes == {"follow_up": 1, "identifier": 1, "prose": 4, "standalone": 4}
    # a slice mean is the mean of its cases
    prose = [by_id[i].scores["mrr"] for i in ("warranty", "battery", "follow", "nothing")]
    assert result.slices["prose"]["mrr"] == pytest.approx(sum(prose) / 4)  # type: ignore[arg-type]
    assert result.latency_ms["p95"] >= result.latency_ms["p50"] > 0
    assert result.llm_calls_per_1000 is None  # no LLM move ran: not 0, unknown


def test_the_follow_up_move_searches_the_history_only_when_on(index: Index, settings: Settings) -> None:
    off = run_arm(CASES, QueryWise(settings, index), Arm(name="off", mode="bm25"), METRICS)
    on = run_arm(CASES, QueryWise(settings, index), Arm(name="on", mode="bm25", moves=("follow_up",)), METRICS)
    f_off, f_on = (next(c for c in r.cases if c.id == "follow") for r in (off, on))
    assert f_off.searched == ["how fast is it"] and f_off.untouched
    assert f_on.follow_up == "ran" and f_on.searched[0] == "how fast is express shipping next day" and not f_on.untouched
    assert f_on.scores["recall@1"] == 1.0 > f_off.scores["recall@1"]  # type: ignore[operator]
    w_on = next(c for c in on.cases if c.id == "warranty")
    assert w_on.untouched and w_on.follow_up == "skipped"  # pass-through for a standalone message


def test_ablation_compares_each_arm_with_the_baseline(index: Index, settings: Settings) -> None:
    plan = plan_ablation(settings, ["follow_up", "dense", "hyde", "multi_query"], mode="bm25")
    assert [a.name for a in plan.arms] == ["baseline", "+follow_up", "dense"]
    assert set(plan.skipped) == {"hyde", "multi_query"}  # LLM moves not turned on: a note, never faked
    base = run_arm(CASES, QueryWise(settings, index), plan.arms[0], METRICS)
    fu = run_arm(CASES, QueryWise(settings, index), plan.arms[1], METRICS)
    deltas = {(d.slice, d.metric): d.diff for d in compare_arms(base, fu)}
    assert deltas[("follow_up", "recall@1")].delta == 1.0 and deltas[("follow_up", "recall@1")].n == 1
    assert deltas[("standalone", "recall@1")].delta == 0.0
    with pytest.raises(ValueError, match="unknown ablation 'telepathy'"):
        plan_ablation(settings, ["telepathy"])


def test_a_move_that_helps_one_slice_and_hurts_another_is_flagged() -> None:
    arm = Arm(name="a")
    runs_a, runs_b = [], []
    for i in range(40):  # slice s1 gains 0.5 on every case, s2 loses 0.5
        s = "s1" if i % 2 else "s2"
        runs_a.append(CaseRun(id=str(i), slices=[s], scores={"mrr": 0.5}))
        runs_b.append(CaseRun(id=str(i), slices=[s], scores={"mrr": 1.0 if s == "s1" else 0.0}))
    base, other = summarise(arm, ["mrr"], runs_a), summarise(Arm(name="+x"), ["mrr"], runs_b)
    deltas = compare_arms(base, other)
    assert next(d for d in deltas if d.slice == "all").diff.direction == 0
    assert mixed_effects(deltas) == ["+x helps s1 (+0.500) but hurts s2 (-0.500) on mrr"]


def test_components_from_labelled_cases(index: Index, settings: Settings) -> None:
    cases = [
        Case(id="1", message="Vela X3 warranty", relevant={"x3-warranty": 1}, slices=["standalone"], route="kb", action="answer", filters={}),
        Case(id="2", message="QR-5126", relevant={"cushions": 1}, slices=["standalone"], route="lookup", action="ask", filters={"category": "accessory"}),
    ]
    runs = [
        CaseRun(id="1", slices=["standalone"], route="kb", route_status="ran", action="answer", untouched=True),
        CaseRun(id="2", slices=["standalone"], route="kb", route_status="fallback", action="answer", untouched=False,
                filters={"category": "Accessory", "price": {"lt": 30.0}}),
    ]  # fmt: skip
    routed = settings.model_copy(update={"routing": RoutingSettings(routes=[RouteSpec(name="kb"), RouteSpec(name="lookup")])})
    assert component_scores(cases, runs, settings).fallback_rate is None  # no routes: the default is no fallback
    c = component_scores(cases, runs, routed)
    assert c.router is not None and c.router.accuracy == 0.5 and c.router.per_route["lookup"].recall == 0.0
    assert c.router.matrix[c.router.rows.index("lookup")][c.router.labels.index("kb")] == 1
    assert c.fallback_rate == 0.5 and c.standalone_untouched == 0.5 and c.clarification_rate == 0.0
    assert c.ambiguity is not None and c.ambiguity.missed_when_should == 1.0 and c.ambiguity.asked_when_should_not == 0.0
    assert c.filters is not None and c.filters.exact_match == 0.5
    assert c.filters.per_field["category"].exact == 1.0  # compared as data: case-folded
    assert c.filters.per_field["price"].exact == 0.0 and c.filters.per_field["price"].n == 1


def test_adversarial_access_set_finds_no_violation(index: Index, settings: Settings) -> None:
    secured = settings.model_copy(update={"access": AccessSettings(fields={"market": "markets"})})
    probe = access_probe(CASES, QueryWise(secured, index), max_cases=3)
    assert probe.n_probes == 2 * 3 * 5  # two market values in the shop, three cases, five attacks
    assert probe.n_hits_checked > 0 and probe.violations == 0 and probe.examples == []
    assert access_probe(CASES, QueryWise(settings, index)).note.startswith("no [access] fields")


class SmugglingProvider:
    """An LLM that answers every plan call with a filter setting the *other* market, through a
    filter schema that wrongly lists the access field: the input that would widen access if model
    output could ever reach the session's constraints."""

    name = "smuggler"
    model = "smuggler"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: StructuredRequest) -> StructuredResult:
        self.calls += 1
        out = {"route": None, "standalone": None, "clarifying_question": None, "options": None, "assumption": None,
               "semantic_query": None, "filters": {"markets": ["eu", "us"], "category": None}}  # every market
        return StructuredResult(parsed=out, usage=Usage(input_tokens=10, output_tokens=10), latency_s=0.0, model=self.model)

    def close(self) -> None:
        return None


def test_an_llm_plan_that_sets_the_session_field_widens_nothing(index: Index, settings: Settings) -> None:
    hostile = settings.model_copy(update={
        "access": AccessSettings(fields={"market": "markets"}),
        "filters": FilterSettings(fields={"category": FilterField(type="keyword")}),  # an access field cannot be a filter field (#37)
        "understanding": UnderstandingSettings(moves=["llm_filters"]),
    })
    provider = SmugglingProvider()
    with QueryWise(hostile, index, provider=provider) as qw:
        probe = access_probe(CASES, qw, max_cases=3)
        assert qw.understander.tier is not None
        report = qw.understander.tier.budget.report()
        # Every adversarial message got the model's answer (called, or the same single turn from the cache) ...
        assert report.calls == provider.calls and report.calls + report.cache_hits == probe.n_probes == 30
        # ... each answer tried to set the market, and each attempt was dropped as an access field.
        assert report.dropped == {"access": provider.calls} and report.fallbacks == {}
        assert probe.n_hits_checked > 0 and probe.violations == 0, probe.examples
        # The EU-only chunk never reaches a US session, whatever the model asked for.
        us = qw.ask("replacement cushions QR-5126", session={"market": "us"}, mode="bm25")
        assert us.plan.access == parse_where(["markets=us"]) and "cushions" not in {h.id for h in us.hits}


def test_evaluate_and_its_json(index: Index, settings: Settings) -> None:
    s = settings.model_copy(update={"understanding": UnderstandingSettings(moves=["follow_up", "spelling"])})
    report = evaluate(CASES, QueryWise(s, index), METRICS, mode="bm25", ablate=["follow_up"], probe_access=False)
    data = json.loads(EvalResult.from_report(report).model_dump_json())
    assert data["version"] == 1
    assert data["n"] == 5 and set(data["overall"]) == {"recall@1", "ndcg@10", "mrr", "zero_result_rate"}
    assert set(data["slices"]["prose"]) == set(data["overall"])
    assert [c["id"] for c in data["cases"]] == [c.id for c in CASES] and "scores" in data["cases"][0]
    assert list(data["ablation"]["arms"]) == ["baseline", "+follow_up"]
    fu = next(d for d in data["ablation"]["deltas"] if d["arm"] == "+follow_up" and d["slice"] == "follow_up" and d["metric"] == "recall@1")
    assert fu["delta"] == 1.0 and {"low", "high", "p_value", "significant"} <= set(fu)


# --- judged granularity: documents cut into chunks ------------------------------------------------

MANUAL = (
    "Unpacking the base station and its cable takes a minute.\n\n"
    "The zebra mango tariff applies to deliveries on islands.\n\n"
    "Recycling the old unit is free at every collection point."
)


@pytest.fixture
def cut_index(tmp_path: Path, hash_embedder, settings: Settings) -> Iterator[Index]:  # type: ignore[no-untyped-def]
    from querywise.chunking import Chunker
    from querywise.corpus import read_corpus

    source = tmp_path / "records.jsonl"
    rows = [{"id": "hours", "text": "Opening hours of the shop: nine to five, tariff board at the door."}, {"id": "manual", "text": MANUAL}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    chunks = read_corpus(source, chunker=Chunker(max_chars=80)).chunks
    assert [c.id for c in chunks] == ["hours", "manual#0", "manual#1", "manual#2"]
    ix = build_index(chunks, tmp_path / "cut", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


def test_a_case_judging_a_cut_record_is_scored_per_document(cut_index: Index, settings: Settings) -> None:
    metrics = parse_metrics(["hit_rate@1,ndcg@10,recall@5"])
    cases = [
        _case("doc", "zebra mango tariff islands", ["manual"], ["standalone", "prose"]),
        _case("chunk", "zebra mango tariff islands", ["manual#1"], ["standalone", "prose"]),  # a chunk id: per chunk, as before
        _case("short", "opening hours tariff board", ["hours"], ["standalone", "prose"]),
    ]
    by_id = {c.id: c for c in run_arm(cases, QueryWise(settings, cut_index), Arm(name="bm25", mode="bm25"), metrics).cases}
    # The hit on the record's 2nd chunk counts as the record; its other chunks do not repeat it.
    assert by_id["doc"].top[0] == "manual" and by_id["doc"].top.count("manual") == 1
    assert by_id["doc"].scores == {"hit_rate@1": 1.0, "ndcg@10": 1.0, "recall@5": 1.0}
    assert by_id["chunk"].top[0] == "manual#1" and by_id["chunk"].scores["hit_rate@1"] == 1.0
    assert by_id["short"].top[0] == "hours" and by_id["short"].scores["hit_rate@1"] == 1.0
    assert not any("#" in i for i in by_id["doc"].top) and any("#" in i for i in by_id["short"].top)


def test_a_document_cut_in_many_pieces_does_not_crowd_the_others_out_of_a_per_document_cut_off(
    tmp_path: Path, hash_embedder, settings: Settings,  # type: ignore[no-untyped-def]
) -> None:
    from querywise.chunking import Chunker
    from querywise.corpus import read_corpus

    source = tmp_path / "records.jsonl"
    long = " ".join(f"Zebra mango note {i}: the zebra mango trail runs past marker {i}." for i in range(14))
    rows = [{"id": "long", "text": long}, {"id": "other", "text": "A zebra was seen near the river bank at dawn. Later the herd walked on toward the far hills to rest."}]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    chunks = read_corpus(source, chunker=Chunker(max_chars=80)).chunks
    assert sum(c.doc_id == "long" for c in chunks) > 10 and "other" not in {c.id for c in chunks}  # both cut in pieces
    ix = build_index(chunks, tmp_path / "pieces", settings=settings, embedder=hash_embedder)
    try:
        case = _case("doc", "zebra mango", ["other"], ["standalone", "prose"])
        qw = QueryWise(settings, ix)
        alone = run_arm([case], qw, Arm(name="bm25", mode="bm25"), parse_metrics(["recall@10"])).cases[0]
        beside = run_arm([case], qw, Arm(name="bm25", mode="bm25"), parse_metrics(["recall@10,recall@100"])).cases[0]
    finally:
        ix.close()
    # The 10 best chunks are all pieces of "long": the search goes on until 10 documents (here,
    # both) are ranked, so the second document is found whatever other cut-off is asked for.
    assert alone.top == ["long", "other"] and alone.scores["recall@10"] == 1.0
    assert beside.scores["recall@10"] == alone.scores["recall@10"]


def test_judged_ids_are_read_once_from_the_index(cut_index: Index) -> None:
    judged = JudgedIds.of(cut_index)
    assert judged.chunk_ids == {"hours", "manual#0", "manual#1", "manual#2"} and judged.doc_ids == {"manual"}
    assert judged.per_document(["manual"]) and judged.per_document(["hours", "manual"])
    assert not judged.per_document(["manual#1"]) and not judged.per_document(["hours"]) and not judged.per_document(["nowhere"])
