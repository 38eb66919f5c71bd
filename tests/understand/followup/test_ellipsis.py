"""Elliptical follow-ups (#34 item 4). A phrase of place or time ("and in Japan?", "Only in women?",
"No, I meant in Canada.") adds to the previous question's frame, or takes the place of what the same
preposition governs there, never the frame's subject's; "what about for X?" still asks the question
again of X; a definite noun phrase ("What about the lead problem?") is an aspect of the subject, kept
beside it, not put in its place. Invented examples."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn

U, A = "user", "assistant"


def test_a_place_phrase_is_added_to_the_previous_question_not_swapped_for_its_subject() -> None:
    history = [Turn(role=U, text="What is Waldorf education?"),
               Turn(role=A, text="Waldorf education is a school model built around art, movement and practical work."),
               Turn(role=U, text="How much does it usually cost?"),
               Turn(role=A, text="Fees vary widely; private schools charge several thousand a year.")]
    said = form("and in Norway?", history)
    assert said.startswith("How much does Waldorf education usually cost in Norway"), said


def test_the_same_preposition_swaps_its_object() -> None:
    history = [Turn(role=U, text="Can I rent a canal boat without a licence?"),
               Turn(role=A, text="Yes, most hire companies give a short lesson before you set off."),
               Turn(role=U, text="Where would I hire one in Wales?"),
               Turn(role=A, text="Several yards on the Llangollen canal rent boats by the week.")]
    said = form("And in Scotland?", history)
    assert "in Scotland" in said and "Wales" not in said, said


def test_a_correction_asks_the_previous_question_again_with_its_phrase() -> None:
    history = [Turn(role=U, text="How does a solar water heater work?"),
               Turn(role=A, text="A collector on the roof warms a fluid that heats the tank."),
               Turn(role=U, text="Tell me about the rebate."),
               Turn(role=A, text="Several states pay back part of the cost.")]
    said = form("No, I meant in Spain.", history)
    assert said.startswith("Tell me about the rebate in Spain"), said


def test_what_about_for_another_thing_asks_the_question_again_of_it() -> None:
    history = [Turn(role=U, text="How much does a second-hand sailboat cost?"),
               Turn(role=A, text="Small cruisers start around ten thousand.")]
    said = form("What about for a restored narrowboat?", history)
    assert said.startswith("How much does a restored narrowboat cost"), said


def test_a_definite_aspect_stays_beside_the_subject_instead_of_replacing_it() -> None:
    history = [Turn(role=U, text="Why are sodium batteries getting so much attention?"),
               Turn(role=A, text="They use cheap, abundant materials and work well in the cold."),
               Turn(role=U, text="How long do they last in cars?"),
               Turn(role=A, text="Current cells keep most of their capacity for a few thousand cycles.")]
    said = form("What about the fire risk?", history)
    assert "fire risk" in said and "sodium batteries" in said and not said.startswith("How long do"), said


def test_a_phrase_without_the_subject_in_the_frame_keeps_the_conversations_subject() -> None:
    history = [Turn(role=U, text="How long should I train for a triathlon?"),
               Turn(role=A, text="Most beginners need about twelve weeks."),
               Turn(role=U, text="How long does recovery take afterwards?"),
               Turn(role=A, text="Plan on one to two weeks of easy movement.")]
    said = form("And in winter?", history)
    assert "recovery" in said and "winter" in said and "triathlon" in said, said


def test_a_bare_prepositional_phrase_is_an_ellipsis() -> None:
    history = [Turn(role=U, text="Does creatine improve sprint performance?"),
               Turn(role=A, text="Trials show small gains in repeated sprints."),
               Turn(role=U, text="Tell me more about the Danish trial."),
               Turn(role=A, text="It followed 120 students for a year; the gains were clearest in women.")]
    said = form("Only in women?", history)
    assert "Danish trial" in said and "women" in said, said


def test_a_question_word_after_the_preposition_is_a_question_of_its_own() -> None:
    history = [Turn(role=U, text="What is the Turing test?"),
               Turn(role=A, text="A test of whether a machine's answers can pass for a person's.")]
    assert "Turing test in" not in form("in which paper", history)


def test_the_question_asked_again_of_a_product_still_swaps_the_product() -> None:
    history = [Turn(role=U, text="How long is the warranty on the Halden Solace 7?"),
               Turn(role=A, text="Two years from the date of purchase.")]
    said = form("And the Pro?", history)
    assert "Pro" in said and "warranty" in said, said


def test_what_about_for_a_class_of_people_adds_to_the_question_not_its_subject() -> None:
    history = [Turn(role=U, text="Ada Vintner. Governorship."),
               Turn(role=A, text="Vintner became governor in 1991."),
               Turn(role=U, text="What reforms did she make?"),
               Turn(role=A, text="She cut rail fares and opened night schools.")]
    said = form("what about for children?", history)
    assert "Ada Vintner" in said and "for children" in said, said
