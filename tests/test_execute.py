from __future__ import annotations

from pathlib import Path

import pytest

from querywise.conditions import Where, parse_where
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.execute import execute
from querywise.index import Hit, Index, build_index, rrf
from querywise.index.engine import Mode
from querywise.plan import Cover, DriftGuard, PlanQuery, QueryPlan
from querywise.retrieve import IndexRetriever


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Index:  # type: ignore[no-untyped-def]
    ix = build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


def _plan(*queries: tuple[str, str, float], **kw) -> QueryPlan:  # type: ignore[no-untyped-def]
    return QueryPlan(message=queries[0][0], route="kb_search", queries=[PlanQuery(text=t, kind=k, weight=w) for t, k, w in queries], **kw)  # type: ignore[arg-type]


def test_one_query_keeps_its_own_scores(index: Index) -> None:
    result = execute(_plan(("Vela X3 warranty", "original", 1.0)), index, k=3, mode="bm25")
    assert [(h.id, h.score) for h in result.hits] == [(h.id, h.score) for h in index.search("Vela X3 warranty", mode="bm25", k=3)]
    assert result.plan.trace[-1].move == "execute"


def test_several_queries_fuse_with_weighted_rrf_on_ids(index: Index) -> None:
    plan = _plan(("warenty for the X3", "original", 1.0), ("warranty for the X3", "spelling", 0.5))
    result = execute(plan, index, k=4, mode="bm25", depth=10)
    lists = [r.ids for r in result.per_query]
    assert lists[0] != lists[1]  # the misspelt original finds less
    expected = rrf(lists, k=60, weights=[1.0, 0.5])[:4]
    assert [(h.id, pytest.approx(s)) for h, (_, s) in zip(result.hits, expected, strict=True)] == [(cid, pytest.approx(s)) for cid, s in expected]
    assert [h.rank for h in result.hits] == list(range(1, len(expected) + 1))


def test_access_is_always_applied(index: Index) -> None:
    plan = _plan(("warranty earbuds cushions shipping", "original", 1.0), access=parse_where(["markets=us"]))
    ids = {h.id for h in execute(plan, index, k=10, mode="dense").hits}
    assert ids and "cushions" not in ids  # the EU-only chunk is invisible to a US session


def test_inferred_filters_are_relaxed_and_said(index: Index) -> None:
    plan = _plan(("warranty", "original", 1.0), filters=parse_where(["price>100"]), inferred_filters=parse_where(["category=earbuds"]))
    result = execute(plan, index, k=5, mode="bm25")
    assert {h.id for h in result.hits} == {"x3-warranty", "x3pro-warranty"}
    assert result.relaxed == ["category = earbuds"] and "relaxed inferred" in (result.plan.trace[-1].changed or "")


def test_stated_filters_are_never_relaxed_and_the_culprit_is_named(index: Index) -> None:
    plan = _plan(("warranty", "original", 1.0), filters=parse_where(["price<50", "category=headphones"]), access=parse_where(["markets=eu"]))
    result = execute(plan, index, k=5, mode="dense")
    assert result.hits == [] and result.relaxed == []
    # Each alone matches something, so it is their combination that leaves nothing.
    assert result.empty_because == ["the combination price < 50 and category = headphones"]
    lone = execute(_plan(("warranty", "original", 1.0), filters=parse_where(["price>5000"])), index, k=5, mode="bm25")
    assert lone.empty_because == ["price > 5000"]


def test_a_plan_without_queries_searches_nothing(index: Index) -> None:
    result = execute(QueryPlan(message="where is my order", route="account"), index)
    assert result.hits == [] and result.per_query == []


# --- every empty result says why ------------------------------------------------------------------


def test_an_access_field_no_chunk_carries_is_named_without_the_session_value(index: Index) -> None:
    plan = _plan(("Vela X3 warranty", "original", 1.0), access=parse_where(["tenant=acme-secret"]))
    result = execute(plan, index, k=5, mode="bm25")
    assert result.hits == [] and result.empty_because == ["no chunk of the index carries the access field 'tenant'"]
    assert "acme-secret" not in " ".join(result.empty_because) + str(result.plan.trace[-1].details)


def test_a_filter_field_no_chunk_carries_is_named(index: Index) -> None:
    plan = _plan(("warranty", "original", 1.0), filters=parse_where(["colour=red", "price<300"]), access=parse_where(["markets=eu"]))
    result = execute(plan, index, k=5, mode="dense")
    assert result.empty_because == ["no chunk carries the field 'colour', so colour = red matches nothing"]


def test_an_access_constraint_nothing_meets_is_named_by_its_field(index: Index) -> None:
    result = execute(_plan(("Vela X3 warranty", "original", 1.0), access=parse_where(["markets=jp"])), index, k=5, mode="hybrid")
    assert result.hits == [] and result.empty_because == ["no chunk matches this session's access (markets)"]
    assert "jp" not in result.empty_because[0]


def test_a_query_text_the_index_has_no_word_of_is_the_reason(index: Index) -> None:
    plain = execute(_plan(("zzzz qqqq", "original", 1.0)), index, k=5, mode="bm25")
    assert plain.empty_because == ["the index returned nothing for the query text (BM25: none of its words is in them)"]
    kept = execute(_plan(("zzzz qqqq", "original", 1.0), filters=parse_where(["price<100"]), access=parse_where(["markets=us"])), index, mode="bm25")
    assert kept.empty_because == ["the index returned nothing for the query text among the chunks the filters keep (BM25: none of its words is in them)"]


def test_no_hits_always_come_with_a_reason(index: Index) -> None:
    plans = [
        _plan(("warranty", "original", 1.0), filters=parse_where(["price>5000"])),
        _plan(("warranty", "original", 1.0), inferred_filters=parse_where(["category=nothing"]), access=parse_where(["markets=jp"])),
        _plan(("zzzz", "original", 1.0), ("qqqq", "spelling", 0.5)),
        _plan(("warranty", "original", 1.0), filters=parse_where(["price<50", "category=headphones"])),
        QueryPlan(message="where is my order", route="account"),
    ]
    for plan in plans:
        for mode in ("bm25", "dense", "hybrid"):
            result = execute(plan, index, k=5, mode=mode)  # type: ignore[arg-type]
            assert result.hits or result.empty_because, (plan.message, mode)
    assert execute(plans[-1], index).empty_because == ["the plan searches nothing (route account, action answer)"]
    # The plan's typed reason, not a step found in its trace.
    unsearched = QueryPlan(message="where is my order", route="account", unsearched="route account does not search")
    assert execute(unsearched, index).empty_because == ["route account does not search"]


def test_the_hits_of_each_reading_are_grouped_by_it(index: Index) -> None:
    plan = QueryPlan(message="warranty on the X3", route="kb_search", queries=[
        PlanQuery(text="warranty on the X3", kind="original"),
        PlanQuery(text="warranty on the Vela X3", kind="reading", reading="Vela X3"),
        PlanQuery(text="shipping", kind="reading", reading="Other"),
    ])  # fmt: skip
    result = execute(plan, index, k=3, mode="bm25", depth=10)
    assert set(result.by_reading) == {"Vela X3", "Other"}
    assert [h.id for h in result.by_reading["Vela X3"]] == result.per_query[1].ids[:3]
    assert [h.id for h in result.by_reading["Other"]] == result.per_query[2].ids[:3]


def test_under_a_cover_the_readings_are_grouped_not_fused(index: Index) -> None:
    plan = QueryPlan(message="warranty on the X3", route="kb_search", action=Cover(readings=["Vela X3", "Other"]), queries=[
        PlanQuery(text="warranty on the X3", kind="original"),
        PlanQuery(text="warranty on the Vela X3", kind="reading", reading="Vela X3"),
        PlanQuery(text="shipping", kind="reading", reading="Other"),
    ])  # fmt: skip
    result = execute(plan, index, k=3, mode="bm25", depth=10)
    assert [h.id for h in result.hits] == [h.id for h in index.search("warranty on the X3", mode="bm25", k=3)]  # the message's own
    assert [h.id for h in result.by_reading["Other"]] == result.per_query[2].ids[:3]


# Enough chunks for the drift guard's clarity (the message's best cosine over its 50th): the shop,
# and fifty about nothing it sells.
FILLER = [Chunk(id=f"filler-{i}", text=f"Gardening note {i}: tulip bulbs, compost heaps, rain barrels and hedge trimming {i}.",
                payload={"markets": ["eu", "us"]}) for i in range(50)]
GUARD = DriftGuard(against="Standard orders ship within how many business days?", clarity=0.2, away=0.15)


@pytest.fixture
def wide_index(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Index:  # type: ignore[no-untyped-def]
    ix = build_index([*shop, *FILLER], tmp_path / "wide", settings=settings, embedder=hash_embedder)
    yield ix
    ix.close()


def _answered(message: str, answer: str) -> QueryPlan:
    """The follow-up move's plan after an answer: the message, and the answer query at ten times its
    weight, guarded against the message drifting away from it."""
    guard = GUARD.model_copy(update={"against": message})
    return QueryPlan(message=message, route="kb_search", queries=[
        PlanQuery(text=message, kind="original"),
        PlanQuery(text=f"{message} {answer}", kind="standalone", weight=10.0, unless_drift=guard),
    ])  # fmt: skip


CUSHIONS = "Replacement cushions for the Vela X3 are part QR-5126."


def test_a_change_of_subject_after_an_answer_keeps_the_message_s_own_top_hit(wide_index: Index) -> None:
    # The user asked about cushions, was answered, and now asks about shipping: the answer query
    # would put the cushions first; its drift guard leaves it out and the trace says on what figures.
    message = "Standard orders ship within how many business days?"
    unguarded = _answered(message, CUSHIONS)
    unguarded.queries[1].unless_drift = None
    assert execute(unguarded, wide_index, k=3, mode="dense").hits[0].id == "cushions"
    result = execute(_answered(message, CUSHIONS), wide_index, k=3, mode="dense")
    assert result.hits[0].id == wide_index.search(message, mode="dense", k=1)[0].id == "shipping"
    assert result.per_query[1].left_out and result.per_query[0].left_out is None
    step = result.plan.step("execute")
    assert step is not None and "left out by its drift guard" in step.reason and "out of the fusion" in (step.changed or "")
    [check] = step.details["drift_guard"]
    assert check["fired"] and check["checked"] and check["clarity"] >= 0.2 and check["drift"] >= 0.15


def test_a_genuine_follow_up_keeps_its_answer_query(wide_index: Index) -> None:
    message = "which part fits the X3 Pro cushions?"
    result = execute(_answered(message, CUSHIONS), wide_index, k=3, mode="dense")
    assert all(r.left_out is None for r in result.per_query)
    step = result.plan.step("execute")
    assert step is not None and step.changed is None
    [check] = step.details["drift_guard"]
    assert check["checked"] and not check["fired"] and check["drift"] < 0.15
    assert result.hits[0].id == "cushions"


def test_a_retriever_without_dense_cosines_keeps_the_guarded_query_and_says_so(wide_index: Index) -> None:
    own = IndexRetriever(wide_index)

    class Elsewhere:  # a retriever that is not the querywise index: no cosines promised
        name, filters_inside = "someone's endpoint", True

        def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
            return own.retrieve(text, k=k, where=where, mode=mode)

    message = "Standard orders ship within how many business days?"
    result = execute(_answered(message, CUSHIONS), Elsewhere(), k=3, mode="dense")
    assert result.hits[0].id == "cushions"  # fused as planned
    step = result.plan.step("execute")
    assert step is not None
    [check] = step.details["drift_guard"]
    assert not check["checked"] and not check["fired"] and "no cosines" in check["why"] and "someone's endpoint" in check["why"]


def test_a_small_index_cannot_measure_clarity_and_keeps_the_query(index: Index) -> None:
    result = execute(_answered("Standard orders ship within how many business days?", CUSHIONS), index, k=3, mode="dense")
    [check] = result.plan.step("execute").details["drift_guard"]  # type: ignore[union-attr]
    assert not check["fired"] and "under 50" in check["why"]
