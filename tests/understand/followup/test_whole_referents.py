"""What a conversation talks about is a whole thing, never a bit of a clause: an adverb and the verb
after it, a closing "again", a predicate adjective, a linking verb, an amount the user gave, a
particle or a verb the trimming cut off are no part of it, and a name with an ampersand is one
name (#34). Invented conversations."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn
from querywise.understand.followup import conversation_subject

U, A = "user", "assistant"


def test_an_adverb_ends_the_subject_and_its_verb_is_no_part_of_it() -> None:
    assert conversation_subject(["My cholesterol actually went up last year."]) == "cholesterol"
    history = [Turn(role=U, text="My ferritin suddenly dropped after I went vegetarian."),
               Turn(role=A, text="Ferritin reflects the iron your body has stored; a plant-based diet holds less of the easily absorbed kind.")]
    text = form("Does it affect sleep?", history)
    assert "ferritin" in text.lower()
    assert "suddenly" not in text and "dropped" not in text


def test_a_closing_adverb_leaves_the_verb_before_it_out() -> None:
    assert conversation_subject(["Could hyperinflation happen again?"]) == "hyperinflation"
    assert conversation_subject(["What does garden leave mean exactly?"]) == "garden leave"


def test_a_predicate_adjective_is_no_part_of_the_subject() -> None:
    assert conversation_subject(["Are electric scooters safe to ride?"]) == "electric scooters"
    assert conversation_subject(["Is hydrotherapy available on prescription?"]) == "hydrotherapy"


def test_a_linking_verb_and_its_adjective_end_the_subject() -> None:
    assert conversation_subject(["Why does my sourdough look flat and dense?"]) == "sourdough"


def test_a_name_with_an_ampersand_is_one_name() -> None:
    assert conversation_subject(["What is the S&P 500?"]) == "the S&P 500"
    history = [Turn(role=U, text="Is the S&P 500 a good first investment?"),
               Turn(role=A, text="A fund that tracks it spreads your money over five hundred large companies at low cost.")]
    assert "S&P 500" in form("How often is it rebalanced?", history)


def test_an_amount_the_user_gave_is_never_what_it_stands_for() -> None:
    history = [Turn(role=U, text="Do air-source heat pumps work when it's freezing, like minus 15?"),
               Turn(role=A, text="Modern cold-climate models keep heating well below freezing, with lower efficiency.")]
    text = form("How much does it cost to run?", history)
    assert "minus" not in text and "15" not in text
    assert conversation_subject(["I'm spending five months in Portugal."]) == "Portugal"


def test_a_name_with_a_number_after_its_noun_is_still_a_thing() -> None:
    # "cone 6" is a designator, not an amount: it stays what a later "it" can take.
    history = [Turn(role=U, text="I want my glazes to mature at cone 6."),
               Turn(role=A, text="Many mid-range stoneware glazes are formulated for that temperature.")]
    assert "cone 6" in form("Can an electric kiln reach it?", history)


def test_a_verb_cut_off_the_subject_joins_no_name_after_it() -> None:
    subject = conversation_subject(["How did the manuscript end up in Lisbon?"])
    assert subject is not None and "end up" not in subject
    assert conversation_subject(["Which trail up Ben Nevis is the easiest?"]) == "Ben Nevis"


def test_a_question_closed_by_do_keeps_its_subject_whole() -> None:
    assert conversation_subject(["What does the borrow checker in Rust do?"]) == "the borrow checker in Rust"


def test_a_participle_verb_after_the_wh_word_leaves_its_object_whole() -> None:
    assert conversation_subject(["Who won Roland Garros in 1989?"]) == "Roland Garros"
    assert conversation_subject(["Who taught Chopin?"]) == "Chopin"
    assert conversation_subject(["What made Sister Rosetta Tharpe famous?"]) == "Sister Rosetta Tharpe"


def test_a_closing_predicate_adjective_is_no_part_of_the_name_before_it() -> None:
    assert conversation_subject(["What kept the Kinks together?"]) == "the Kinks"
    assert conversation_subject(["What made Astral Weeks so influential?"]) == "Astral Weeks"
    history = [Turn(role=U, text="What made Sister Rosetta Tharpe famous?"),
               Turn(role=A, text="Her electric guitar playing on gospel records in the 1940s.")]
    text = form("When did she start recording?", history)
    assert "Sister Rosetta Tharpe" in text and "famous" not in text
    assert conversation_subject(["Was Blonde on Blonde well received?"]) == "Blonde on Blonde"
