"""The follow-up gate: flags what leans on the history, passes what stands alone."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from querywise.catalog import Catalog
from querywise.understand.followup import FollowUp, check_follow_up, concat_standalone

DEMO = Path(__file__).resolve().parents[2] / "src" / "querywise" / "demo"
WARRANTY = ["How long is the warranty on the Halden Solace 7?"]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog.load(DEMO / "catalog.jsonl")


def _jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (DEMO / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_never_on_the_first_turn() -> None:
    verdict = check_follow_up("does it cover water damage?", [])
    assert verdict == FollowUp(False, "first turn: there is no history to depend on")


def test_pronoun_without_antecedent_says_which_word() -> None:
    verdict = check_follow_up("does it cover water damage?", WARRANTY)
    assert verdict.needs_context
    assert verdict.cues == ("pronoun:it",)
    assert verdict.reason == "pronoun 'it' with no antecedent in the message"


@pytest.mark.parametrize(
    ("message", "cue"),
    [
        ("And the Pro?", "opener:and"),
        ("what about the Lite?", "opener:what about"),
        ("how about in the EU?", "opener:how about"),
        ("the Lite too?", "particle:too"),
        ("Is that one waterproof?", "demonstrative:that"),
        ("Are those in stock?", "demonstrative:those"),
        ("How much is this?", "demonstrative:this"),
        ("which tips do I need for that?", "demonstrative:that"),
        ("how do I reset them?", "pronoun:them"),
        ("What was her name?", "pronoun:her"),
        ("Is it easy to pair?", "pronoun:it"),  # tough-movement: "it" is what is easy to pair
        ("Why?", "short"),
        ("any exceptions?", "short"),
        ("Which is cheaper?", "set:which"),
        ("What else is covered?", "set:else"),
        ("Is the Knoll Max louder?", "comparative:louder"),
        ("How is a speaker different?", "relation:different"),
        ("What is the largest in the range?", "ellipsis:largest"),
        ("can I still change the address?", "definite:address"),
        ("is there a deadline?", "existential"),
        ("What kind do I need for running?", "classifier:kind"),
        ("even ones bought in the EU?", "pro-form:ones"),
        ("Can I collect my order there?", "pro-form:there"),
        ("Is it effective for treating insomnia?", "pronoun:it"),  # not an extraposing adjective
        ("Oh, the strap is washable?", "reaction:oh"),  # an interjection reacts to the last turn
        ("What was the impact of the recall?", "relation:impact"),  # the impact on what?
        ("What are the important parts of a good setup?", "domain:important"),  # a complement that names no domain
        ("Besides the colours, what made it popular?", "pronoun:it"),  # "it" cannot take the plural "colours"
    ],
)
def test_cues(message: str, cue: str) -> None:
    verdict = check_follow_up(message, WARRANTY)
    assert verdict.needs_context
    assert cue in verdict.cues


@pytest.mark.parametrize(
    "message",
    [
        "Is it possible to change my address?",  # expletive "it"
        "Is it possible for me to get a refund?",
        "Is it easy to pair the Knoll Max with a TV?",  # no gap after "pair": extraposition
        "What time is it in Rotterdam?",
        "Please cancel order 40128833 and refund it",  # antecedent in the first conjunct
        "How long does it take to ship to Spain?",
        "What does it mean to be IP68 rated?",
        "Where is my order 40128833? it should have arrived yesterday",  # antecedent in the message
        "I want the Solace 7 Lite. Does it have noise cancelling?",
        "Tell me about the Reed 2 and its charging case",
        "What is the return window for opened earbuds?",
        "noise cancelling headphones under $200 released after 2024",
        "Is there a store in Rotterdam?",
        "What is the relationship between warranty and legal guarantee?",
        "Do you ship to Norway this year?",  # "this year": the time of speaking
        "tell me a joke",
        "It's my first time ordering from the EU shop",  # "it's my first time": no referent
        "Is it possible for getting two discounts on one order?",
        "My address changed and I wanted to know which impact this has on my order.",  # "this": the first clause
        "Hi there, I need to change my delivery address",  # a greeting, not a place
        "Besides the Solace 7, what made it popular?",  # a singular name before the clause: its referent
        "What is the impact of shipping on the EU warranty?",  # both terms of the relation
        "What are the important settings of the Solace 7?",  # the complement names the domain
    ],
)
def test_standalone_messages_have_no_cue_in_their_words(message: str) -> None:
    verdict = check_follow_up(message, WARRANTY)
    # At most topic continuity (a weak verdict: the plan still searches the message as typed).
    assert verdict.strength != "strong", verdict.reason
    assert verdict.cues in ((), ("continuity",))


def test_catalog_product_after_the_pronoun_is_its_referent(catalog: Catalog) -> None:
    message = "How do I reset it to factory settings on the Solace 7?"
    assert not check_follow_up(message, WARRANTY, catalog=catalog).needs_context
    # Without a catalog a model-like name ("Solace 7") still counts.
    assert not check_follow_up(message, WARRANTY).needs_context


def test_catalog_product_as_object_is_not_the_referent(catalog: Catalog) -> None:
    # "it" is the subject that fits the Solace 7 Pro: something else, said before.
    verdict = check_follow_up("does it fit the Solace 7 Pro?", ["Is HC-3417 in stock?"], catalog=catalog)
    assert verdict.cues == ("pronoun:it",)


def test_capitalised_name_after_the_pronoun_is_not_its_referent() -> None:
    # Only model-like names ("Solace 7") stand for a product; a holiday is not what ships.
    assert check_follow_up("Does it ship on Christmas Eve?", ["Is the express courier fast?"]).needs_context


def test_catalog_mention_anchors_a_definite_description(catalog: Catalog) -> None:
    message = "how many days does the Tide last on a charge?"
    assert not check_follow_up(message, WARRANTY, catalog=catalog).needs_context


def test_demo_conversation(catalog: Catalog) -> None:
    history: list[str] = []
    flagged = []
    for turn in _jsonl("conversation.jsonl"):
        if check_follow_up(turn["message"], history, catalog=catalog).strength == "strong":
            flagged.append(turn["turn"])
        history.append(turn["message"])
    assert flagged == [2, 3, 4]  # ellipsis, follow-up, typo with "it"; turn 10 passes through


@pytest.mark.parametrize("with_catalog", [True, False])
def test_demo_rewrites_gate_matches_the_people(catalog: Catalog, with_catalog: bool) -> None:
    """The gate's strong verdicts are exactly the rows a person rewrote."""
    for row in _jsonl("rewrites.jsonl"):
        verdict = check_follow_up(row["message"], row["history"], catalog=catalog if with_catalog else None)
        assert (verdict.strength == "strong") == (row["message"] != row["standalone"]), (row["message"], verdict.reason)


def test_topic_continuity_is_a_weak_cue() -> None:
    history = ["Can I swim with the Corra Tide 4?"]
    message = "Describe strap cleaning."  # names nothing, repeats nothing of the history
    verdict = check_follow_up(message, history)
    assert (verdict.needs_context, verdict.strength, verdict.cues) == (True, "weak", ("continuity",))
    assert "continue its topic" in verdict.reason
    # A cue in the words is strong, and continuity is then not consulted.
    assert check_follow_up("Describe its strap cleaning.", history).strength == "strong"
    # Repeating a word of the conversation, naming something, or asking for a definition
    # introduces a topic of its own.
    assert not check_follow_up("Does swimming drain batteries?", history).needs_context
    assert not check_follow_up("Describe Bramble speakers.", history).needs_context
    assert not check_follow_up("What is a tracker?", history).needs_context
    # Greetings and thanks set no topic to continue.
    assert not check_follow_up(message, ["Hello!", "thanks, good morning"]).needs_context


def test_result_is_frozen() -> None:
    verdict = check_follow_up("And the Pro?", WARRANTY)
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.needs_context = False  # type: ignore[misc]


def test_concat_standalone() -> None:
    assert (
        concat_standalone("And the Pro? ", WARRANTY) == "How long is the warranty on the Halden Solace 7? And the Pro?"
    )
    assert concat_standalone("And the Pro?", ["first", "second "]) == "second. And the Pro?"
    assert concat_standalone("Hello", []) == "Hello"


def test_a_message_longer_than_the_gate_reads_stands_alone() -> None:
    # Elliptical follow-ups are short; past 4,000 characters the gate does no work at all.
    verdict = check_follow_up("does it cover water damage? " + "x" * 4_000, ["Is the Solace 7 warranty 18 months?"])
    assert not verdict.needs_context and "stands alone" in verdict.reason


def test_an_idiomatic_it_is_no_pointer() -> None:
    # "it sounds like", "it looks as if": the speaker's impression; "it's raining": the weather
    assert "pronoun:it" not in check_follow_up("It sounds like a good idea, how do I do that?", ["I want to cancel my plan."]).cues
    assert "pronoun:it" not in check_follow_up("it looks as if the strap is loose", ["Tell me about the Tide 4."]).cues
    assert "pronoun:it" not in check_follow_up("it's raining, what should I wear?", ["Should I bring an umbrella?"]).cues
    assert "pronoun:it" in check_follow_up("does it look good?", ["Tell me about the Tide 4."]).cues
