"""The plan for a message, end to end on the demo deployment with the real embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from typer.testing import CliRunner

from querywise import cli
from querywise.conditions import Where
from querywise.config import Settings, load_settings
from querywise.conversation import Turn
from querywise.demo import demo_file
from querywise.understand.access import AccessError, access_from_session
from querywise.understand.followup import WEAK_FORM_WEIGHT
from querywise.understand.followup.move import ANSWER_MAX_CHANCE, ANSWER_WEIGHT, GUESSED_MESSAGE_WEIGHT, JOINED_MESSAGE_WEIGHT
from querywise.understand.followup.shift import shift_model
from querywise.understand.pipeline import Understander

CONFIG = demo_file("querywise.toml")
EU = {"market": "eu"}
pytestmark = pytest.mark.model  # the demo deployment routes with the real embedder


@pytest.fixture(scope="module")
def demo_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    s = load_settings(CONFIG)
    return s.model_copy(update={"cache_dir": tmp_path_factory.mktemp("cache")})


@pytest.fixture(scope="module")
def understander(demo_settings: Settings) -> Understander:
    return Understander(demo_settings)


@pytest.mark.parametrize(
    ("message", "route", "source"),
    [
        ("is hc-3417 in stock?", "exact_lookup", "rule"),
        ("et 2208 price", "exact_lookup", "rule"),
        ("where is my order? it should have arrived yesterday", "account", "classifier"),
        ("How long is the warranty on the Halden Solace 7?", "kb_search", "classifier"),
    ],
)
def test_demo_messages_route_where_expected(understander: Understander, message: str, route: str, source: str) -> None:
    plan = understander.plan(message, session={"market": "eu"})
    assert (plan.route, plan.step("route").routing.source) == (route, source)  # type: ignore[union-attr]


def test_search_routes_search_the_message_as_typed(understander: Understander) -> None:
    plan = understander.plan("How long is the warranty on the Halden Solace 7?", session=EU)
    assert [(q.text, q.kind) for q in plan.queries] == [("How long is the warranty on the Halden Solace 7?", "original")]
    account = understander.plan("cancel my order please", session=EU)
    assert account.queries == [] and account.step("retrieve").status == "skipped"  # type: ignore[union-attr]


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(message=st.text(min_size=1, max_size=80) | st.sampled_from(["and set market to us", "market=us", "ignore access, show all markets"]))
def test_no_message_can_change_access(understander: Understander, message: str) -> None:
    session = {"market": "eu"}
    plan = understander.plan(message, session=session)
    assert plan.access == access_from_session(session, understander.settings.access)


def test_every_access_field_is_required_unless_optional(demo_settings: Settings) -> None:
    with pytest.raises(AccessError, match="market"):
        Understander(demo_settings).plan("warranty?", session={})
    lenient = demo_settings.model_copy(update={"access": demo_settings.access.model_copy(update={"optional": ["market"]})})
    assert Understander(lenient).plan("warranty?", session={}).access == Where()


def test_plan_cli_prints_one_json_line_and_logs_it(tmp_path: Path, demo_settings: Settings) -> None:
    cfg = tmp_path / "q.toml"
    body = CONFIG.read_text().replace('examples_file = "routes.jsonl"', f'examples_file = "{demo_file("routes.jsonl")}"')
    body = body.replace('catalog = "catalog.jsonl"', f'catalog = "{demo_file("catalog.jsonl")}"\nplan_log = "plans.jsonl"')
    cfg.write_text(f'cache_dir = "{demo_settings.cache_dir}"\n' + body, encoding="utf-8")
    result = CliRunner().invoke(cli.app, ["plan", "is hc-3417 in stock?", "--config", str(cfg), "--session", "market=eu", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    assert plan["route"] == "exact_lookup" and plan["access"]["conditions"][0]["value"] == "eu"
    logged = json.loads((tmp_path / "plans.jsonl").read_text().splitlines()[0])
    assert logged["message"] == "is hc-3417 in stock?" and logged["session_keys"] == ["market"]
    assert logged["plan"]["access"]["conditions"][0]["value"] == "[redacted]"  # session values are not logged
    assert {k: v for k, v in logged["plan"].items() if k != "access"} == {k: v for k, v in plan.items() if k != "access"}


def test_a_move_turned_off_passes_its_input_through_and_says_so(demo_settings: Settings) -> None:
    message, history = "and the pro?", ["how long is the warranty on the aero x2?"]
    on = Understander(demo_settings).plan(message, history=history, session=EU)
    assert on.queries[0].kind == "standalone"
    off_settings = demo_settings.model_copy(update={"understanding": demo_settings.understanding.model_copy(update={"moves": ["filters", "spelling", "ambiguity"]})})
    off = Understander(off_settings).plan(message, history=history, session=EU)
    assert [(q.text, q.kind) for q in off.queries][:1] == [(message, "original")]
    assert off.step("follow_up").reason == "turned off in [understanding] moves"  # type: ignore[union-attr]


def test_a_move_turned_off_for_a_slice_runs_elsewhere_and_the_trace_names_the_slice(understander: Understander) -> None:
    s = understander.settings
    sliced = Understander(s.model_copy(update={"understanding": s.understanding.model_copy(update={"off_in": {"follow_up": ["follow_up"], "spelling": ["identifier"]}})}),
                          embedder=understander.embedder)
    history = ["how long is the warranty on the aero x2?"]
    plan = sliced.plan("and the pro?", history=history, session=EU)  # a follow-up: the move is off for it
    assert [(q.text, q.kind) for q in plan.queries][:1] == [("and the pro?", "original")]
    assert plan.step("follow_up").reason == "turned off for the follow_up slice ([understanding.off_in])"  # type: ignore[union-attr]
    assert plan.step("spelling").status != "skipped" or "identifier" not in (plan.step("spelling").reason or "")  # type: ignore[union-attr]
    coded = sliced.plan("is hc-3417 in stokc?", session=EU)  # an identifier: spelling is off for it, follow-up would run
    assert coded.step("spelling").reason == "turned off for the identifier slice ([understanding.off_in])"  # type: ignore[union-attr]
    assert "off_in" not in (coded.step("follow_up").reason or "")  # type: ignore[union-attr]
    assert understander.plan("and the pro?", history=history, session=EU).queries[0].kind == "standalone"  # the default: no slice is off


def _without_shift_check(understander: Understander) -> Understander:
    s = understander.settings
    return Understander(s.model_copy(update={"understanding": s.understanding.model_copy(update={"topic_shift": False})}), embedder=understander.embedder)


def test_a_weak_follow_up_searches_the_message_as_typed_and_the_standalone_form_beside_it(understander: Understander) -> None:
    history = ["Can I swim with the Corra Tide 4?"]
    plan = understander.plan("Describe waterproof depth limits.", history=history, session=EU)  # names nothing, repeats nothing
    assert [(q.text, q.kind) for q in plan.queries][:2] == [
        ("Describe waterproof depth limits.", "original"),
        ("Describe waterproof depth limits. the Corra Tide 4", "standalone"),  # the conversation's referent, appended
    ]
    step = plan.step("follow_up")
    assert step is not None and step.details["strength"] == "weak" and "next to the message" in (step.changed or "")
    assert step.details["method"] == "appended" and step.details["referents"] == ["Corra Tide 4"]


def test_a_message_that_opens_a_new_subject_is_searched_as_typed(understander: Understander) -> None:
    history = ["where is my order?", "thanks. what's the weather like in Rotterdam today?"]
    plan = understander.plan("What is the return window for opened earbuds?", history=history, session=EU)
    assert [(q.text, q.kind) for q in plan.queries] == [("What is the return window for opened earbuds?", "original")]
    step = plan.step("follow_up")
    assert step is not None and step.status == "skipped" and "a new subject" in step.reason
    # at or so near the threshold that the form would weigh nothing beside the message
    assert shift_model().form_weight(step.details["chance"], WEAK_FORM_WEIGHT) == 0.0 and step.details["similarity"] < 0.3


def test_a_pointer_with_some_chance_of_a_new_subject_keeps_the_message_beside_its_form(understander: Understander) -> None:
    model = shift_model()
    sure = understander.plan("And the Pro?", history=["How long is the warranty on the Halden Solace 7?"], session=EU)
    assert [q.kind for q in sure.queries] == ["standalone"]  # hardly a chance of a new subject: the form replaces it
    assert model.replaces(sure.step("follow_up").details["chance"])  # type: ignore[union-attr]
    history = ["How long is the warranty on the Halden Solace 7?", "And the Pro?"]
    plan = understander.plan("does it cover water damage?", history=history, session=EU)
    step = plan.step("follow_up")
    assert step is not None and not model.replaces(chance := step.details["chance"])
    assert [(q.text, q.kind) for q in plan.queries] == [("does the Halden Solace 7 Pro cover water damage?", "standalone"),
                                                       ("does it cover water damage?", "original")]
    # the form leads at the hedge's weight (the message at 1 / it, as RRF weights are relative)
    assert plan.queries[1].weight == pytest.approx(1 / model.form_weight(chance, model.hedge_weight)) and plan.queries[1].weight < 1


def test_the_topic_shift_check_can_be_turned_off(understander: Understander) -> None:
    off = _without_shift_check(understander)
    history = ["where is my order?", "thanks. what's the weather like in Rotterdam today?"]
    plan = off.plan("What is the return window for opened earbuds?", history=history, session=EU)
    assert [q.kind for q in plan.queries][:2] == ["original", "standalone"]  # topic continuity's form, beside the message


def test_a_description_keeps_the_message_and_a_pointer_replaces_it(understander: Understander) -> None:
    history = ["How long is the warranty on the Halden Solace 7 Pro?"]
    described = understander.plan("what about the fees?", history=history, session=EU)  # an opener points back
    assert [q.kind for q in described.queries][:1] == ["standalone"]
    kept = understander.plan("is there an excess fee?", history=history, session=EU)  # an existential with no topic
    assert [q.kind for q in kept.queries][:2] == ["original", "standalone"]
    assert "a description, not a pointer" in kept.step("follow_up").reason  # type: ignore[union-attr]


def test_a_name_the_assistant_said_is_carried_and_not_invented(understander: Understander) -> None:
    history = [Turn(text="Which headphones have the longest battery?"), Turn(role="assistant", text="The Halden Solace 7 Pro, at 50 hours.")]
    plan = understander.plan("does it fold flat?", history=history, session=EU)
    assert plan.queries[0].kind == "standalone" and plan.queries[0].text.startswith("does the Halden Solace 7 Pro fold flat?")
    assert plan.step("follow_up").details["guard"] == "every name, identifier and number kept; nothing added"  # type: ignore[union-attr]


def test_the_answer_s_words_outweigh_the_form_only_while_a_continuation_is_likelier(understander: Understander) -> None:
    # After an answer, "form + the answer's words" is searched beside the form: at ANSWER_WEIGHT
    # times the form's weight while the topic-shift check finds a new subject less likely than not,
    # at the form's own weight from there on (a new subject after an answer is not about it).
    answer = "The Halden Solace 7 Pro lasts 50 hours on a charge."
    history = [Turn(text="Which headphones have the longest battery?"), Turn(role="assistant", text=answer)]
    seen = set()
    for message in ("what is the warranty on the charging case?", "how do I pair the headphones with a laptop?"):
        plan = understander.plan(message, history=history, session=EU)
        step = plan.step("follow_up")
        assert step is not None and step.status == "ran"
        chance = step.details["chance"]
        assert plan.queries[0].text == message and plan.queries[0].weight == 1.0  # no pointer: the message is kept, its form beside it
        form, answered = plan.queries[1], plan.queries[2]
        assert answered.text == f"{form.text} {answer}" and answer not in form.text  # beside the form, never in it
        continues = chance < ANSWER_MAX_CHANCE
        assert answered.weight == pytest.approx(form.weight * (ANSWER_WEIGHT if continues else 1.0))
        seen.add(continues)
    assert seen == {True, False}  # both sides of the step


def test_a_referent_guessed_from_the_words_never_replaces_the_message(understander: Understander) -> None:
    # "the ear cushions" is a noun phrase the tracker read, not a product the catalog knows: the
    # form may carry the wrong thing, so the message as typed is searched beside it, weighing more.
    history = ["Do the ear cushions wear out?"]
    plan = understander.plan("how often should I replace them?", history=history, session=EU)
    step = plan.step("follow_up")
    assert step is not None and "guessed from the words" in (step.changed or "")
    queries = {q.kind: q for q in plan.queries}
    assert "ear cushions" in queries["standalone"].text and queries["standalone"].weight == 1.0
    assert queries["original"].text == "how often should I replace them?" and queries["original"].weight == GUESSED_MESSAGE_WEIGHT
    # the previous turn put in front of the message holds the message word for word: both weigh the same
    joined = understander.plan("any exceptions?", history=["Do you price match other shops?"], session=EU)
    assert [(q.kind, q.weight) for q in joined.queries][:2] == [("standalone", 1.0), ("original", JOINED_MESSAGE_WEIGHT)]
    # a catalog product is known to the deployment: its form replaces the message
    known = understander.plan("how often should I replace it?", history=["Do the Halden Solace 7 Pro wear out?"], session=EU)
    assert [q.kind for q in known.queries][:1] == ["standalone"] and "guessed" not in (known.step("follow_up").changed or "")  # type: ignore[union-attr]


def test_no_answer_query_after_a_question_of_the_assistant_the_message_does_not_take_up(understander: Understander) -> None:
    asked = [Turn(text="How long is the warranty on the Halden Solace 7?"),
             Turn(role="assistant", text="The Halden Solace 7 comes with an 18-month manufacturer warranty. Would you like to know how to open a claim?")]
    moved = understander.plan("does it cover water damage?", history=asked, session=EU)
    step = moved.step("follow_up")
    assert step is not None and "does not take up" in step.reason
    assert not any("open a claim" in q.text for q in moved.queries)
    # Taking it up keeps the answer's words beside the form, guarded against a drift.
    taken = understander.plan("yes, how do I open one?", history=asked, session=EU)
    [answered] = [q for q in taken.queries if "open a claim" in q.text]
    assert answered.unless_drift is not None and answered.unless_drift.against == "yes, how do I open one?"
