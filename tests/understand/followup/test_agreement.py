"""A pointer and its referent agree (#34): "she" never takes a male-marked noun of kinship or sex
("my brother"), nor "he" a female one; a kinship noun after a possessive heads its own phrase, the
verb after it no part of it ("my mom *gave* ...")."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn
from querywise.understand.followup.people import noun_gender

U, A = "user", "assistant"


def test_nouns_of_kinship_and_sex_give_their_gender_and_others_none() -> None:
    assert noun_gender("my older sister") == "f"
    assert noun_gender("grandfather") == "m"
    assert noun_gender("the landlord") == ""
    # The head is the noun before its complement, not the complement's last word.
    assert noun_gender("my sister in Galway") == "f" and noun_gender("the sister of the king") == "f"


def test_she_takes_the_woman_of_the_situation_not_a_body_the_answer_named() -> None:
    history = [Turn(role=U, text="My sister in Galway bought a used car from a dealer and the gearbox failed after two weeks. Can she get her money back?"),
               Turn(role=A, text=("In Ireland the Consumer Rights Act 2022 gives buyers of goods from a trader a right to a remedy when goods are faulty. "
                                  "For a fault that shows within 30 days, the buyer can reject the car and get a full refund. After that the dealer "
                                  "gets one chance to repair. The Competition and Consumer Protection Commission publishes guidance."))]
    searched = form("does the 30 days start from when she paid", history)
    assert "Commission" not in searched and "sister" in searched


def test_she_takes_the_woman_of_the_situation_not_the_man_named_after_her() -> None:
    history = [Turn(role=U, text="My aunt lent my nephew $15,000 for college. Does the loan need a written contract?"),
               Turn(role=A, text="A written promissory note is advisable for a family loan of that size.")]
    assert form("can she charge interest on the loan", history).startswith("can aunt charge interest on the loan")


def test_he_takes_the_man_of_the_situation_not_the_woman() -> None:
    history = [Turn(role=U, text="My grandma moved in with my uncle last spring. Who pays her property taxes now?"),
               Turn(role=A, text="The owner of record remains responsible for the property taxes.")]
    assert form("does he have to report the rent", history).startswith("does uncle have to report the rent")


def test_a_kinship_noun_before_its_verb_is_the_referent_not_the_verb_with_it() -> None:
    history = [Turn(role=U, text="My dad started metformin last month and feels dizzy."),
               Turn(role=A, text="Dizziness can follow a change in blood sugar.")]
    assert form("should he stop taking it", history).startswith("should dad stop taking")


def test_he_takes_the_man_an_answer_called_he_before_a_country_named_since() -> None:
    history = [Turn(role=U, text="Who was Erik Vaale?"),
               Turn(role=A, text="Erik Vaale was the first prime minister of Norland. He led the country for twenty years."),
               Turn(role=U, text="Why was Norland expelled from the Baltic Union?"),
               Turn(role=A, text="The union expelled Norland in 1961 over a tariff dispute.")]
    assert form("How did he react?", history) == "How did Erik Vaale react?"


def test_he_takes_a_man_of_the_situation_whose_age_makes_him_read_as_a_name() -> None:
    # "90 year old uncle" is read as a name (its number): its head noun still makes it a man.
    history = [Turn(role=U, text="My 90 year old uncle in Perth has fallen twice at night this month. How can we keep him safe?"),
               Turn(role=A, text="Night-time falls in older adults are often linked to poor lighting. A physiotherapist can assess balance.")]
    assert "uncle need a referral" in form("will he need a referral for the physiotherapist", history)
