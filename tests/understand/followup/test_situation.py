"""The topic of a situation opening (#34): the rarest thing the speaker's situation names, never
the person, the place, the time or a predicate. Invented openings."""

from __future__ import annotations

import pytest

from querywise.conversation import Turn
from querywise.understand.followup import check_follow_up, standalone_form
from querywise.understand.followup.situation import is_situation
from querywise.understand.followup.standalone import conversation_subject


@pytest.mark.parametrize(
    ("opening", "topic"),
    [
        # Not the relative, the city or the time: the drug.
        ("My uncle in Leeds was put on amiodarone last month and his skin has turned grey. Is that normal?", "amiodarone"),
        # The place after the thing is cut off, and the place alone is no topic.
        ("We have squirrels in our loft in Ontario and they chew the wiring. What should we do?", "squirrels"),
        # Whoever says something is a person, not the topic.
        ("My plumber says the boiler needs a new heat exchanger. Is that worth doing?", "heat exchanger"),
        # A lone word after a linking verb is a predicate ("gets damp"), not a thing.
        ("Our cellar gets damp every winter. What can we do about it?", "cellar"),
        # A common word the question names yields to the rarer thing of the story ("with food").
        ("My aunt in Cork was started on allopurinol last week and gets headaches. Should she take it with food?", "allopurinol"),
        ("Our hamster hasn't touched his food since yesterday. Is that an emergency?", "hamster"),
        # A rarer word the question names is what it asks about.
        ("I'm salaried and work 60 hours a week. Am I entitled to overtime?", "overtime"),
        # A month is no name the question asks about.
        ("Our cottage in Maine is heated with propane. Would a heat pump really work up here in February?", "heat pump"),
        # A place the story goes to is no topic; the place a trip is, is (a guard: it was before).
        ("We're taking our kids to Norway in March and want to see the midnight sun. Where's the best place to stay?", "the midnight sun"),
        ("We're thinking of a trip to Madeira. When is the best time to see dolphins?", "Madeira"),
        # A time of day is a time ("at dusk"), a progressive's verb no part of the thing.
        ("I think we have mice in our garage, I hear scratching at dusk. What should I do?", "mice"),
        ("I'm 63 and thinking of claiming OAS early because I've retired. Is that a mistake?", "OAS"),
        # A modal question's verb before its pronoun object ("cover *it*") and a past tense after the
        # speaker's thing ("*ate*") are no part of the thing.
        ("Our boiler flooded the utility room while we were away. Will contents insurance cover it?", "contents insurance"),
        ("Our border collie ate a bunch of grapes an hour ago. What should we do?", "border collie"),
    ],
)
def test_a_situation_opening_is_about_the_rarest_thing_it_names(opening: str, topic: str) -> None:
    assert conversation_subject([opening]) == topic


def test_only_a_statement_in_the_first_person_before_a_question_is_a_situation() -> None:
    assert is_situation(["My cat sneezes a lot.", "Is that normal?"])
    assert not is_situation(["The bridge opened in 1890 after a flood.", "Who designed it?"])  # nobody's situation
    assert not is_situation(["My cat sneezes a lot."])  # no question
    assert not is_situation(["Is my cat ill?"])  # a question alone: its own topic reads as before


def test_a_question_that_names_its_own_topic_keeps_it() -> None:
    # The closing question names what it asks about: that stays the topic (`asked_topic`).
    assert conversation_subject(["I type all day for work. Would a split keyboard help?"]) == "split keyboard"


def test_a_situation_that_names_no_thing_keeps_the_opening_topic() -> None:
    # "fallen" (a participle), "night" and "this month" (times), "safe" (a predicate): no thing,
    # so the topic stays what the opening names first, the man it is about.
    opening = "My 90 year old uncle in Perth has fallen twice at night this month. How can we keep him safe?"
    assert conversation_subject([opening]) == "90 year old uncle"


def test_where_the_story_happened_is_no_reading_of_it_beside_the_thing() -> None:
    history = [Turn(role="user", text="We adopted a rescue greyhound in Leeds last month. He howls every night. What can we do?"),
               Turn(role="assistant", text="Many rescue greyhounds howl at night at first. A crate near the bedroom helps.")]
    message = "how long does it usually take to settle"
    found = standalone_form(message, history, check_follow_up(message, history))
    # One reading, the dog: never "how long does Leeds usually take to settle" searched beside it.
    assert "rescue greyhound" in found.text and found.readings == () and [r.text for r in found.referents] == ["rescue greyhound"]


def test_a_three_letter_noun_the_speaker_owns_is_a_referent() -> None:
    # "our old cat": a determined noun of three letters is a phrase, so "it" takes the cat.
    history = [
        Turn(role="user", text="Our old cat keeps drinking from the tap. Is that a sign of something?"),
        Turn(role="assistant", text="Cats often prefer running water."),
    ]
    message = "does it need a fountain"
    assert "cat" in standalone_form(message, history, check_follow_up(message, history)).text.lower()
