"""The conversation's subject and what a pointer may take after answers: a content noun phrase or a
name, never a generic head ("the options"), a verb fragment ("went wrong on ..."), a pointer
phrase ("the second"), a month or a description for "there"; an answer's carried-on subject for
"it"; the idiomatic "it" of a remark or of "worth it" kept as typed (#34). Invented examples."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn
from querywise.understand.followup import conversation_subject
from querywise.understand.followup.answer_refs import enumeration
from querywise.understand.followup.answer_topic import answer_topic

U, A = "user", "assistant"


def test_the_subject_is_what_a_generic_head_is_about() -> None:
    assert conversation_subject(["What are the options for treating acne scars?"]) == "treating acne scars"
    assert conversation_subject(["What are the best ways to store fresh basil?"]) == "fresh basil"


def test_the_subject_is_the_name_not_the_verb_before_it() -> None:
    assert conversation_subject(["What went wrong on Mariner 1?"]) == "Mariner 1"
    assert conversation_subject(["When is the best time of year to visit Lisbon?"]) == "Lisbon"


def test_a_pointer_phrase_is_never_what_a_later_pronoun_takes() -> None:
    # The list pointer finds no list ("a few choices" told in prose): the next "its" must not become "the second's".
    history = [Turn(role=U, text="What can I use to descale a kettle?"),
               Turn(role=A, text="Descaling removes the chalky layer that hard water leaves behind, and a few household products do it well."),
               Turn(role=U, text="Tell me more about the second one."),
               Turn(role=A, text="You can boil water with a spoonful of it, leave it for an hour and rinse.")]
    assert "second" not in form("What are its downsides?", history)


def test_there_takes_a_place_name_never_a_phrase_around_a_month() -> None:
    history = [Turn(role=U, text="Is it worth spending a week in Porto?"),
               Turn(role=A, text="Porto rewards a slow visit: the riverside, the port lodges and day trips up the Douro valley."),
               Turn(role=U, text="What happens at the street party in June?"),
               Turn(role=A, text="The night of Saint John fills the old town with music, grilled sardines and plastic hammers.")]
    assert form("How do I get there from Madrid?", history) == "How do I get in Porto from Madrid?"


def test_it_after_an_answer_that_carries_its_subject_on_is_that_subject() -> None:
    history = [Turn(role=U, text="Which medicines help with hay fever?"),
               Turn(role=A, text="Several kinds are sold over the counter, and a doctor can prescribe others."),
               Turn(role=U, text="Tell me more about the nasal spray."),
               Turn(role=A, text="Fluticasone is a steroid spray that calms the lining of the nose. It works best when taken every day.")]
    assert form("What are its side effects?", history) == "What are Fluticasone's side effects?"


def test_an_answers_subject_needs_the_next_sentence_to_carry_it_on() -> None:
    assert answer_topic("Fluticasone is a steroid spray. It works best daily.") is not None
    assert answer_topic("Fluticasone is a steroid spray. Doctors prescribe it often.") is None
    found = answer_topic("The foam on top of fermenting cider is often called barm. It is mostly yeast.")
    assert found is not None and found.text == "barm"


def test_the_it_of_a_remark_stays_and_the_next_clauses_it_is_resolved() -> None:
    history = [Turn(role=U, text="How do I make kombucha at home?"),
               Turn(role=A, text="Kombucha is sweet tea fermented by a culture of bacteria and yeast for one to two weeks.")]
    said = form("It sounds like a lot of effort. How long can I keep it in the cupboard?", history)
    assert said.startswith("It sounds like a lot of effort. How long can I keep kombucha")


def test_worth_it_keeps_its_it_when_the_clause_has_a_subject() -> None:
    history = [Turn(role=U, text="How do I get from Oslo to Bergen?"),
               Turn(role=A, text="The Bergen Line train takes about seven hours through the mountains.")]
    assert "worth it" in form("Is the scenic train worth it for that trip?", history)


def test_an_opener_before_a_question_of_its_own_resolves_its_pronoun_in_place() -> None:
    history = [Turn(role=U, text="How long does melatonin take to work?"),
               Turn(role=A, text="Melatonin usually takes 30 to 60 minutes."),
               Turn(role=U, text="Why does it stay longer in older people?"),
               Turn(role=A, text="Older people clear it more slowly.")]
    assert form("And how does it actually make you sleepy?", history) == "And how does melatonin actually make you sleepy?"


def test_two_items_said_to_be_two_are_a_list() -> None:
    answer = "Sautéing and braising are the two main ways to cook greens. Sautéing is quick."
    assert tuple(i.lower() for i in enumeration(answer)) == ("sautéing", "braising")
    history = [Turn(role=U, text="How should I cook kale?"), Turn(role=A, text=answer)]
    assert form("Why is the second one slower?", history) == "Why is braising slower?"


def test_a_possessive_with_a_name_of_its_own_is_about_that_name() -> None:
    assert conversation_subject(["How long does it take to walk Scotland's West Highland Way?"]) == "Scotland's West Highland Way"


def test_a_comparative_is_never_the_focus_appended() -> None:
    assert conversation_subject(["Which one is better if I expect to move abroad?"]) != "better"


def test_the_opening_thing_the_first_answer_takes_up_is_the_subject() -> None:
    history = [Turn(role=U, text="Should I swap my oil boiler for an air source heat pump?"),
               Turn(role=A, text="Air source heat pumps move warmth from the outside air into the house, even in frost.")]
    searched = form("What does installation cost?", history)
    assert "heat pump" in searched and "boiler" not in searched


def test_the_topic_stays_when_the_first_answer_names_it_or_takes_up_nothing_early() -> None:
    kept = [Turn(role=U, text="Should I swap my oil boiler for an air source heat pump?"),
            Turn(role=A, text="An oil boiler is cheap to keep running for a few more years, while heat pumps cost more upfront.")]
    assert "boiler" in form("What does installation cost?", kept)
    late = [Turn(role=U, text="Should I swap my oil boiler for an air source heat pump?"),
            Turn(role=A, text="In colder parts of the country with poor insulation and old radiators, air source heat pumps struggle.")]
    assert "boiler" in form("What does installation cost?", late)



def test_after_answers_a_side_thing_the_turns_before_named_gives_way_to_the_subject() -> None:
    # The subject (the opening's trail) and a side thing an earlier question named (one route of
    # it), which the last question kept in focus without naming it: a question about neither
    # carries the subject alone. While the last question was about the route itself, it stays.
    history = [Turn(role=U, text="I'm planning to hike the Kungsleden trail next summer. Where should I start?"),
               Turn(role=A, text="Most hikers start in Abisko and walk south towards Nikkaluokta."),
               Turn(role=U, text="Is the Padjelanta route less crowded?"),
               Turn(role=A, text="The Padjelanta route is much quieter, with long empty stretches.")]
    assert "Padjelanta" in form("How do you book the mountain huts?", history)
    history += [Turn(role=U, text="How long does the walk take?"), Turn(role=A, text="About a week at an easy pace.")]
    searched = form("How do you book the mountain huts?", history)
    assert "Kungsleden" in searched and "Padjelanta" not in searched
