"""A pronoun whose predicate only the last answer's phrase fills (#34): "seeing them" after an
answer that ends "... the chance of seeing the northern lights" means the northern lights; most
pronouns still mean the user's subject, and keep it."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn

U, A = "user", "assistant"

ROAD = [Turn(role=U, text="Is the Cabot Trail hard to drive?"),
        Turn(role=A, text="The Cabot Trail is a paved loop of about 300 kilometres around Cape Breton Island. The road climbs steeply "
                          "in the highlands, and autumn brings the best colours. Visitors who stop at the lookouts have a good "
                          "chance of spotting pilot whales offshore.")]


def test_a_pronoun_takes_what_the_answer_says_in_its_verbs_object_slot() -> None:
    said = form("When is the best time for spotting them?", ROAD)
    assert "pilot whales" in said and "them" not in said.split()
    assert said.startswith("When is the best time for spotting pilot whales?")


def test_a_pronoun_takes_what_the_answer_says_as_its_verbs_subject() -> None:
    history = [Turn(role=U, text="Why are the Kelso Dunes so tall?"),
               Turn(role=A, text="The Kelso Dunes rise over 200 metres because winds from the west pile up sand from the Mojave "
                                 "River sink against the mountains. To the north, the Cima volcanic field erupted many times in the "
                                 "last million years.")]
    assert form("Could it erupt again?", history).startswith("Could the Cima volcanic field erupt again?")


def test_the_users_subject_keeps_the_pronoun_when_it_fits_the_predicate_too() -> None:
    # Old Faithful was said to erupt before: "it" is still Old Faithful, whatever the answer adds.
    history = [Turn(role=U, text="How often does Old Faithful erupt?"),
               Turn(role=A, text="Old Faithful erupts about every 90 minutes, sending water up to 50 metres into the air."),
               Turn(role=U, text="What drives it?"),
               Turn(role=A, text="Heat from magma warms groundwater deep below. The nearby Steamboat Geyser erupts far less predictably.")]
    assert form("Will it erupt today?", history) == "Will Old Faithful erupt today?"


def test_no_change_when_the_answer_fills_the_slot_with_two_phrases_or_the_wrong_number() -> None:
    two = [ROAD[0], Turn(role=A, text="Visitors often spot pilot whales offshore. Hikers spot black bears on the Skyline Trail.")]
    assert "whales" not in form("When is the best time for spotting them?", two)
    # "it" wants a singular: the plural "pilot whales" is not what it means.
    assert "whales" not in form("When is the best time for spotting it?", ROAD)


def test_a_noun_made_from_the_verb_is_no_slot_of_it() -> None:
    # "a huge eruption": "huge" is no subject of "erupt".
    history = [Turn(role=U, text="What is the Long Valley Caldera?"),
               Turn(role=A, text="The caldera formed in a huge eruption about 760,000 years ago.")]
    assert "huge" not in form("Could it erupt again?", history)


def test_a_light_verbs_slot_says_nothing() -> None:
    history = [Turn(role=U, text="What is CRISPR?"),
               Turn(role=A, text="CRISPR is a gene editing tool. Doctors use whole-genome sequencing to check the edits.")]
    assert form("Has it been used to treat anyone?", history).startswith("Has CRISPR been used")


def test_a_passive_reads_its_subject_in_the_objects_slot() -> None:
    # "are spotted": the passive's subject is what one spots; "Are they protected?" asks what the park protects.
    history = [ROAD[0], Turn(role=A, text="The Cabot Trail is a paved loop around Cape Breton Island. Pilot whales are often spotted "
                                          "offshore in summer, and a reserve on the coast protects nesting puffins.")]
    assert form("Where is the best place for spotting them?", history).startswith("Where is the best place for spotting pilot whales?")
    assert form("Are they protected all year?", history).startswith("Are nesting puffins protected all year?")


def test_the_assistants_question_fills_the_slot_of_the_users_reply() -> None:
    history = [Turn(role=U, text="I got a letter about my car insurance lapsing."),
               Turn(role=A, text="Has your registration expired?")]
    assert form("Yes, it has expired.", history).startswith("Yes, registration has expired.")


def test_an_impersonal_or_extraposed_it_is_left_alone() -> None:
    history = [Turn(role=U, text="What happens if my license is suspended?"),
               Turn(role=A, text="A suspension means that your privilege to drive is taken away for a time. Soap making is "
                                 "dangerous for beginners.")]
    assert "suspension" not in form("What does it mean for my insurance?", history)
    assert "soap" not in form("Is it dangerous to drive anyway?", history).lower()


def test_a_relative_clause_and_a_particle_are_read_through() -> None:
    history = [Turn(role=U, text="Why is Lake Nyos dangerous?"),
               Turn(role=A, text="Lake Nyos sits in a volcanic crater. In 1986 a cloud of carbon dioxide, which leaked from the lake "
                                 "bed, killed about 1,700 people. Engineers now pump out the deep water through a pipe.")]
    assert form("Why did it leak?", history).startswith("Why did carbon dioxide leak?")
    assert form("How often is it pumped out?", history).startswith("How often is the deep water pumped out?")


def test_a_bare_word_in_the_slot_is_no_phrase_for_the_pronoun() -> None:
    # "prove otherwise": a bare singular word after the verb is an adverb as often as a noun; "it"
    # stays the user's kettle.
    history = [Turn(role=U, text="My new kettle leaks from the base. Can the shop refuse a refund?"),
               Turn(role=A, text="Within six months the law assumes a fault was there when you bought it, unless the shop can prove "
                                 "otherwise. After that you may need to show the fault was not caused by wear.")]
    said = form("How would the shop prove it?", history)
    assert "otherwise" not in said and "kettle" in said
