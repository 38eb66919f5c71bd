"""The front door: one deployment object whose verbs every caller uses.

The hashing embedder and the scripted provider keep these fast; every step is the real code's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from querywise.conditions import parse_where
from querywise.config import (
    AccessSettings,
    DeploymentSettings,
    FilterField,
    FilterSettings,
    LLMSettings,
    RouteSpec,
    RoutingSettings,
    Settings,
    UnderstandingSettings,
    load_settings,
)
from querywise.conversation import Turn
from querywise.corpus import Chunk
from querywise.demo import demo_corpus, demo_file
from querywise.deployment_check import DeploymentError
from querywise.execute import execute
from querywise.index import Index, build_index
from querywise.llm.scripted import ScriptedProvider
from querywise.llm.structured import conversation_key
from querywise.service import QueryWise
from querywise.understand.access import AccessError

ROUTES = [
    RouteSpec(name="kb_search", search=True, description="help-centre questions",
              examples=["how long is the warranty on the headphones", "what is the warranty", "does the warranty cover water damage",
                        "how do I pair my headphones"]),
    RouteSpec(name="account", description="the user's own orders", examples=["where is my order", "cancel my order please"]),
]
EU = {"market": "eu"}
LLM_MOVES = ["follow_up", "filters", "spelling", "ambiguity", "llm_rewrite", "llm_route"]


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Iterator[Index]:
    ix = build_index(shop, tmp_path / "ix", settings=Settings(cache_dir=tmp_path / "c"), embedder=hash_embedder)
    yield ix
    ix.close()


def deployment(index: Index, tmp_path: Path, records: list[dict[str, Any]] | None = None, *, min_margin: float = 0.0,
               plan_log: bool = False, overlap: bool = True) -> QueryWise:
    settings = Settings(
        cache_dir=tmp_path / "c",
        routing=RoutingSettings(routes=ROUTES, min_margin=min_margin),
        access=AccessSettings(fields={"market": "markets"}),
        understanding=UnderstandingSettings(moves=LLM_MOVES if records is not None else ["follow_up", "filters", "spelling", "ambiguity"],  # type: ignore[arg-type]
                                            topic_window=3),
        deployment=DeploymentSettings(plan_log=tmp_path / "plans.jsonl" if plan_log else None),
        llm=LLMSettings(overlap=overlap),
    )
    provider = ScriptedProvider.from_records(records) if records is not None else None
    return QueryWise(settings, index, provider=provider)


def plan_rec(message: str, history: list[str], output: dict[str, Any]) -> dict[str, Any]:
    return {"task": "plan", "input": conversation_key(message, history), "output": output}


def test_ask_is_plan_then_execute(index: Index, tmp_path: Path) -> None:
    with deployment(index, tmp_path) as qw:
        result = qw.ask("how long is the Vela X3 warranty", session={"market": "us"}, k=3)
        alone = execute(qw.plan("how long is the Vela X3 warranty", session={"market": "us"}), index, k=3)
    assert [h.id for h in result.hits] == [h.id for h in alone.hits] and result.hits
    assert [s.move for s in result.plan.trace][-1] == "execute"
    assert result.plan.access == parse_where(["markets=us"])


def test_the_library_writes_the_plan_log_not_only_the_cli(index: Index, tmp_path: Path) -> None:
    with deployment(index, tmp_path, plan_log=True) as qw:
        qw.plan("what is the warranty", session={"market": "eu"})
        qw.ask("does it cover water damage?", history=["what is the warranty on the Vela X3"], session={"market": "eu"})
    lines = [json.loads(line) for line in (tmp_path / "plans.jsonl").read_text().splitlines()]
    assert [r["message"] for r in lines] == ["what is the warranty", "does it cover water damage?"]
    assert lines[1]["history"] == [{"role": "user", "text": "what is the warranty on the Vela X3"}] and lines[1]["plan"]["trace"][-1]["move"] == "execute"


def test_search_always_applies_the_session_access(index: Index, tmp_path: Path) -> None:
    with deployment(index, tmp_path) as qw:
        everything = {h.id for h in index.search("warranty earbuds cushions shipping", k=10, mode="bm25")}
        with pytest.raises(AccessError, match="market"):  # no session, no search: access fails closed
            qw.search("warranty earbuds cushions shipping", k=10, mode="bm25")
        us = {h.id for h in qw.search("warranty earbuds cushions shipping", session={"market": "us"}, k=10, mode="bm25")}
        # A caller's own filter narrows, and cannot undo the session's constraint.
        widened = {h.id for h in qw.search("cushions", session={"market": "us"}, where=parse_where(["markets=eu"]), k=10, mode="bm25")}
    assert "cushions" in everything and "cushions" not in us and us
    assert widened == set()


def test_ask_without_an_index_says_what_is_missing(tmp_path: Path, hash_embedder: Any) -> None:
    qw = QueryWise(Settings(cache_dir=tmp_path / "c"), embedder=hash_embedder)
    assert qw.plan("warranty").queries[0].text == "warranty"
    with pytest.raises(ValueError, match="needs an index"):
        qw.ask("warranty")


def test_with_moves_shares_the_index_and_changes_only_the_moves(index: Index, tmp_path: Path) -> None:
    with deployment(index, tmp_path, plan_log=True) as qw, qw.with_moves([]) as bare:
        assert bare.index is qw.index and bare.understander.embedder is qw.understander.embedder
        assert bare.settings.understanding == qw.settings.understanding.model_copy(update={"moves": []})  # topic window, shift check kept
        plan = bare.ask("does it cover water damage?", history=["what is the warranty on the Vela X3"], session=EU).plan
        assert plan.queries[0].text == "does it cover water damage?"  # pass-through: no follow-up move
        assert {s.status for s in plan.trace if s.move != "route" and s.move != "execute"} == {"skipped"}
    assert not (tmp_path / "plans.jsonl").exists()  # an evaluation arm is not traffic: nothing logged


def test_overlap_reuses_the_raw_search_when_the_plan_passes_through(index: Index, tmp_path: Path) -> None:
    message = "what is the warranty on the Vela X3?"
    with deployment(index, tmp_path, [plan_rec(message, [], {"route": "kb_search"})], min_margin=2.0) as qw:
        result = qw.ask(message, session=EU, k=3)
        assert len(qw.understander.tier.provider.calls) == 1  # type: ignore[union-attr]
        overlap = result.plan.step("overlap")
        assert overlap is not None and overlap.status == "ran"
        assert [h.id for h in result.hits] == [h.id for h in execute(qw.understander.plan(message, session=EU), index, k=3).hits]
    # A rewritten follow-up changes the search: the speculative result is not used.
    rewrite = "Does the warranty on the Vela X3 cover water damage?"
    history = ["What is the warranty on the Vela X3?"]
    with deployment(index, tmp_path, [plan_rec("does it cover water damage?", history, {"standalone": rewrite})]) as qw2:
        r2 = qw2.ask("does it cover water damage?", history=history, session=EU, k=3)
    overlap = r2.plan.step("overlap")
    assert overlap is not None and overlap.status == "skipped" and r2.per_query[0].query.text == rewrite


def test_overlap_off_plans_then_executes(index: Index, tmp_path: Path) -> None:
    message = "what is the warranty on the Vela X3?"
    with deployment(index, tmp_path, [plan_rec(message, [], {"route": "kb_search"})], min_margin=2.0, overlap=False) as qw:
        result = qw.ask(message, session=EU, k=3)
    assert result.plan.step("overlap") is None and result.hits


# --- the deployment checked against its index at start-up ---------------------------------------


def test_an_access_field_no_chunk_carries_stops_the_deployment_at_start_up(index: Index, tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "c", access=AccessSettings(fields={"tenant": "tenant"}))
    with pytest.raises(DeploymentError) as caught:
        QueryWise(settings, index)
    message = str(caught.value)
    assert "access field 'tenant': no chunk of the index carries it" in message
    assert "chunks carry: category, markets, price" in message  # what to map the session key to instead
    assert [p.subject for p in caught.value.problems] == ["access.fields.tenant"]


def test_open_names_the_field_and_closes_the_index_it_opened(index: Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "querywise.toml"
    config.write_text('[access]\nfields = { tenant = "tenant_id" }\n', encoding="utf-8")
    closed: list[Path] = []
    close = Index.close
    monkeypatch.setattr(Index, "close", lambda self: (closed.append(self.root), close(self))[1])
    embedder = index.embedder
    monkeypatch.setattr(Index, "embedder", property(lambda self: embedder))  # the test's embedder, not the model
    with pytest.raises(DeploymentError, match="access field 'tenant_id' \\(session key 'tenant'\\)"):
        QueryWise.open(config, index.root)
    assert closed == [index.root]


def test_start_up_warnings_name_the_setting_and_the_deployment_still_answers(index: Index, tmp_path: Path) -> None:
    settings = Settings(
        cache_dir=tmp_path / "c",
        access=AccessSettings(fields={"market": "markets"}),
        filters=FilterSettings(fields={"price": FilterField(type="number"), "colour": FilterField(type="keyword")}),
    )
    with QueryWise(settings, index) as qw:
        assert [(p.severity, p.subject) for p in qw.warnings] == [("warning", "filters.fields.colour")]
        assert "filter field 'colour': no chunk of the index carries it" in qw.warnings[0].message
        assert qw.ask("Vela X3 warranty", session=EU, mode="bm25").hits
    with deployment(index, tmp_path) as clean:
        assert clean.warnings == []


def test_the_demo_deployment_starts_without_a_warning(tmp_path: Path, hash_embedder: Any) -> None:
    settings = load_settings(demo_file("querywise.toml")).model_copy(update={"cache_dir": tmp_path / "c"})
    with build_index(demo_corpus(), tmp_path / "demo", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as qw:
        assert qw.warnings == []
        assert ix.manifest.field_counts is not None and ix.manifest.field_counts["markets"] == len(ix)


@pytest.mark.model  # the drift guard reads real cosines
def test_after_an_answer_a_new_subject_keeps_its_own_top_hit_and_a_reply_keeps_the_answer_s_words(tmp_path: Path) -> None:
    settings = load_settings(demo_file("querywise.toml")).model_copy(update={"cache_dir": tmp_path / "c"})
    warranty = [Turn(text="How long is the warranty on the Halden Solace 7?"),
                Turn(role="assistant", text="The Halden Solace 7 comes with an 18-month manufacturer warranty, counted from the day it was delivered.")]
    returns = [Turn(text="Can I return opened earbuds?"),
               Turn(role="assistant", text="Opened in-ear earbuds can be returned within 14 days if the hygiene seal is intact.")]
    with build_index(demo_corpus(), tmp_path / "demo", settings=settings) as ix, QueryWise(settings, ix) as qw:
        # The user moves on: the answer query was planned (guarded), execute left it out, and says why.
        moved = qw.ask("is the student discount still available?", history=warranty, session=EU, k=3)
        assert any(q.unless_drift is not None for q in moved.plan.queries)
        [check] = moved.plan.step("execute").details["drift_guard"]  # type: ignore[union-attr]
        assert check["fired"] and "left out" in check["why"]
        assert moved.hits[0].id == ix.search("is the student discount still available?", k=1)[0].id == "student-discount-terms"
        # A reply to the answer: the answer's words stay, and find what the message alone does not.
        reply = qw.ask("how do I send them back?", history=returns, session=EU, k=3)
        [kept] = reply.plan.step("execute").details["drift_guard"]  # type: ignore[union-attr]
        assert kept["checked"] and not kept["fired"] and all(r.left_out is None for r in reply.per_query)
        assert reply.hits[0].id == "returns-opened-in-ear" != ix.search("how do I send them back?", k=1)[0].id
