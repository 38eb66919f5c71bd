"""The situation cue (#34): a person who opened with their own situation asks later questions
inside it in the first person ("did my county opt out") -- a weak cue, so the form joins the
message. Not when the opening states no situation, not for "tell me about", not for the country
"US", and not for a message naming a catalog item of its own. Invented conversations."""

from __future__ import annotations

from querywise.catalog import Catalog, Entity
from querywise.conversation import Turn
from querywise.understand.followup import check_follow_up

U, A = "user", "assistant"

SITUATED = [
    Turn(role=U, text="My landlord in Leeds kept our whole deposit over a scuffed skirting board. Is he allowed to do that?"),
    Turn(role=A, text="In England a deposit must be protected in a government-backed scheme within 30 days, and each scheme runs a free dispute service."),
]


def test_a_first_person_question_after_a_stated_situation_asks_inside_it() -> None:
    for message in ("did my deposit get protected", "How long do I have to wait for my deposit?", "we never signed an inventory for our deposit"):
        gate = check_follow_up(message, SITUATED)
        assert gate.needs_context and gate.strength == "weak", message
        assert gate.cues == ("situation",), message


def test_no_situation_no_cue() -> None:
    plain = [Turn(role=U, text="Why is the drinking age in the US 21 and not 18?"), Turn(role=A, text="Congress tied highway money to it in 1984.")]
    # "US" is the country, not the speaker; "tell me about" states no situation of the speaker's.
    assert "situation" not in check_follow_up("Tell me about the negative health effects of drinking.", plain).cues
    short = [Turn(role=U, text="I need help please"), Turn(role=A, text="Of course.")]
    assert "situation" not in check_follow_up("can I get a refund on my order", short).cues


def test_a_message_naming_a_catalog_item_opens_its_own_subject() -> None:
    catalog = Catalog([Entity("1", "Halden Mira 3")])
    history = [Turn(role=U, text="I bought my daughter a pair of headphones last week and the left side crackles."),
               Turn(role=A, text="A crackle on one side is usually the cable or the connector.")]
    gate = check_follow_up("How do I reset my Halden Mira 3?", history, catalog=catalog)
    assert "situation" not in gate.cues
    assert "situation" in check_follow_up("How do I reset my headphones?", history).cues
