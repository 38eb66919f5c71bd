"""A pointer with two candidates (issue #34): every reading covered, or an `ask` whose options are
the readings' standalone queries when the deployment's ambiguity costs say so -- never one picked;
the trace names the candidates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import querywise.demo
from querywise.config import IdentifierRule, Settings, load_settings
from querywise.plan import Ask, Cover, QueryPlan
from querywise.understand.ambiguity import Costs
from querywise.understand.candidates import cover_or_ask
from querywise.understand.pipeline import Understander

DEMO = Path(querywise.demo.__file__).parent
EU = {"market": "eu"}
COMPARE = ["Compare the Halden Solace 7 and the Corra Tide 4."]
NAMES = ["Halden Solace 7", "Corra Tide 4"]
WATER = ["does the Halden Solace 7 cover water damage?", "does the Corra Tide 4 cover water damage?"]
ASKING = {"cost_ask": 3.0}  # a deployment that would rather ask than answer twice


def test_a_short_question_is_covered_at_the_default_costs() -> None:
    choice = cover_or_ask(NAMES, WATER, "does it cover water damage?")
    assert choice.action == Cover(readings=NAMES)
    step = choice.trace_step()
    assert step.details["candidates"] == NAMES and step.details["choice"] == "cover"


def test_asking_cheaper_than_covering_offers_each_reading_as_a_query_to_send_back() -> None:
    choice = cover_or_ask(NAMES, WATER, "does it cover water damage?", costs=Costs(ask=3.0))
    assert choice.action == Ask(question="Which one do you mean: Halden Solace 7 or Corra Tide 4?", options=WATER)
    assert choice.trace_step().details["costs"] == {"ask": 3.0, "cover": 5.0}


def test_a_procedure_is_never_covered_twice_it_is_asked() -> None:
    reset = ["how do I reset the Halden Solace 7?", "how do I reset the Corra Tide 4?"]
    choice = cover_or_ask(NAMES, reset, "how do I reset it?")
    assert isinstance(choice.action, Ask) and choice.action.options == reset
    assert "procedure" in choice.reason


def test_too_many_readings_to_cover_are_asked_about() -> None:
    names = ["A1", "B2", "C3"]
    choice = cover_or_ask(names, [f"is the {n} waterproof?" for n in names], "is it waterproof?", max_cover_readings=2)
    assert isinstance(choice.action, Ask) and "more than 2" in choice.reason


def test_readings_and_queries_must_pair_up() -> None:
    with pytest.raises(ValueError, match="two or more"):
        cover_or_ask(["A1"], ["is the A1 waterproof?"], "is it waterproof?")


# --- through the pipeline: the follow-up move finds the candidates, the ambiguity move decides ------


@pytest.fixture(scope="module")
def demo() -> Settings:
    s = load_settings(DEMO / "querywise.toml")
    # Every message to the help centre (a hashing embedder routes at random), no topic-shift check
    # (it embeds): these tests are about what is done with two candidates.
    routing = s.routing.model_copy(update={"rules": [IdentifierRule(pattern=r"\S", route="kb_search")]})
    understanding = s.understanding.model_copy(update={"moves": ["follow_up", "ambiguity"], "topic_shift": False})
    return s.model_copy(update={"routing": routing, "understanding": understanding})


def plan(demo: Settings, hash_embedder: Any, message: str, history: list[str], **ambiguity: float) -> QueryPlan:
    s = demo.model_copy(update={"ambiguity": demo.ambiguity.model_copy(update=ambiguity)})
    return Understander(s, embedder=hash_embedder).plan(message, history=history, session=EU)


def test_by_default_a_pointer_with_two_candidates_covers_each_reading(demo: Settings, hash_embedder: Any) -> None:
    p = plan(demo, hash_embedder, "does it cover water damage?", COMPARE)
    assert p.action == Cover(readings=NAMES)
    assert [q.text for q in p.queries if q.kind == "standalone"] == WATER  # both searched, fused
    for move in ("follow_up", "ambiguity"):
        step = p.step(move)
        assert step is not None and step.details["candidates"] == NAMES, move


def test_the_ask_policy_asks_with_the_readings_as_options(demo: Settings, hash_embedder: Any) -> None:
    p = plan(demo, hash_embedder, "does it cover water damage?", COMPARE, **ASKING)
    assert isinstance(p.action, Ask) and p.action.options == WATER
    assert "Halden Solace 7" in p.action.question and "Corra Tide 4" in p.action.question
    step = p.step("ambiguity")
    assert step is not None and step.details["candidates"] == NAMES and step.details["choice"] == "ask"


def test_an_option_sent_back_stands_alone(demo: Settings, hash_embedder: Any) -> None:
    asked = plan(demo, hash_embedder, "does it cover water damage?", COMPARE, **ASKING)
    assert isinstance(asked.action, Ask)
    for option in asked.action.options:
        answered = plan(demo, hash_embedder, option, [*COMPARE, "does it cover water damage?"], **ASKING)
        assert [(q.kind, q.text) for q in answered.queries] == [("original", option)]
        assert answered.action.type == "answer"


def test_which_one_is_a_comparison_under_any_policy(demo: Settings, hash_embedder: Any) -> None:
    """ "Which one charges faster?" asks us to choose between both: nothing to ask the user back."""
    for costs in ({}, ASKING):
        p = plan(demo, hash_embedder, "Which one charges faster?", COMPARE, **costs)
        compared = [q.text for q in p.queries if q.kind == "standalone"]
        assert len(compared) == 1 and all(n in compared[0] for n in NAMES)
        assert p.action.type == "answer"


def test_one_candidate_is_resolved_not_asked_about(demo: Settings, hash_embedder: Any) -> None:
    p = plan(demo, hash_embedder, "does it cover water damage?", ["How long is the warranty on the Halden Solace 7?"], **ASKING)
    assert p.action.type == "answer" and p.queries[0].text == "does the Halden Solace 7 cover water damage?"
