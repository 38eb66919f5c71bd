"""Personal pronouns after an answer that names people (#34): "he"/"she" never take a place, a band
or an event, nor someone of the other gender; a person only the answer names is taken; "they"
means the people the answer named together; a title's whole name stays the subject."""

from __future__ import annotations

from searched_form import form

from querywise.conversation import Turn
from querywise.understand.followup.people import answer_pair, answer_people

U, A = "user", "assistant"


def test_an_answers_pronouns_give_each_person_a_gender_and_places_are_no_people() -> None:
    text = ("Greta Lindqvist was a Swedish chemist born in Uppsala, Sweden. In 1931 she met Tomas Berg, "
            "an engineer from Kiruna, and he later built her first laboratory.")
    people = {p.name: p.gender for p in answer_people(text)}
    assert people == {"Greta Lindqvist": "f", "Tomas Berg": "m"}
    assert answer_people("The Lake District Festival was held near Keswick, North Yorkshire, every summer.") == []


def test_he_after_a_woman_the_user_named_is_the_man_the_answer_brought_in() -> None:
    history = [Turn(role=U, text="Who was Greta Lindqvist?"),
               Turn(role=A, text="Greta Lindqvist was a Swedish chemist. She studied dyes at a laboratory run by Tomas Berg.")]
    assert form("Where did he train?", history) == "Where did Tomas Berg train?"


def test_she_after_a_man_the_user_named_is_the_woman_the_answer_brought_in() -> None:
    history = [Turn(role=U, text="Tell me about Anders Holm."),
               Turn(role=A, text="Anders Holm was a Danish painter. In 1902 he married Ingrid Moller, who later ran his gallery herself.")]
    assert form("Was she a painter too?", history) == "Was Ingrid Moller a painter too?"


def test_he_never_takes_the_festival_or_its_place() -> None:
    history = [Turn(role=U, text="What happened at the Roskilde festival in 1978?"),
               Turn(role=A, text="The festival was held in a field outside Roskilde, Denmark. Kim Larsen played the closing concert.")]
    assert form("What did he play?", history) == "What did Kim Larsen play?"


def test_he_after_the_battle_of_a_town_is_the_person_the_answer_named() -> None:
    history = [Turn(role=U, text="What was the Battle of Lindholm?"),
               Turn(role=A, text="It was fought in 1410 between two Danish armies. The young king Erik Valdemar was wounded in the fighting.")]
    assert form("Did he survive?", history) == "Did Erik Valdemar survive?"


def test_two_pronouns_of_two_genders_take_two_people_not_one_twice() -> None:
    history = [Turn(role=U, text="Who wrote the novel The Salt Road?"),
               Turn(role=A, text="The Salt Road was written by Clara Voss in 1911. She wrote it while living with her brother Otto Voss in Hamburg.")]
    said = form("Did she dedicate it to him?", history)
    assert said.startswith("Did Clara Voss dedicate") and said.endswith("to Otto Voss?")


def test_a_person_the_user_named_keeps_he_when_the_answer_adds_someone_of_another_gender() -> None:
    history = [Turn(role=U, text="Who was Lars Eriksen?"),
               Turn(role=A, text="Lars Eriksen was a Norwegian skier. He trained with his sister Marit Eriksen in Lillehammer.")]
    assert form("When did he retire?", history) == "When did Lars Eriksen retire?"


def test_they_after_an_event_is_the_people_the_answer_named_together() -> None:
    assert answer_pair("The crew of Polar Star 3 were Mette Dahl and Jonas Lund, both pilots.") == "Mette Dahl and Jonas Lund"
    history = [Turn(role=U, text="What was the Polar Star 3 flight?"),
               Turn(role=A, text="Polar Star 3 was the first balloon flight over the pole, in 1931. It was flown by Mette Dahl and Jonas Lund.")]
    assert form("How long were they in the air?", history) == "How long were Mette Dahl and Jonas Lund in the air?"


def test_they_after_a_band_is_the_band_not_the_members_the_answer_named() -> None:
    # A name plural in form, and one the answer says with a plural verb, is a group "they" takes itself.
    plural_name = [Turn(role=U, text="When did Glass Harbours form?"),
                   Turn(role=A, text="Glass Harbours formed in 1981 in Leeds, after Ruth Keane and Owen Marsh met at art school.")]
    assert "Owen Marsh" not in form("Where did they record their first album?", plural_name)
    said_were = [Turn(role=U, text="Who were the Quiet Engine?"),
                 Turn(role=A, text="The Quiet Engine were a folk band formed in Bristol in 1970 by Ruth Keane and Owen Marsh.")]
    searched = form("When did they break up?", said_were)
    assert "Quiet Engine" in searched and "Owen Marsh" not in searched


def test_the_subject_is_the_titles_whole_name_after_turns_that_name_part_of_it() -> None:
    history = [Turn(role=U, text="Fenwick Aura heat pump. Launch"),
               Turn(role=A, text="The first units went on sale in 2015, two years late."),
               Turn(role=U, text="Why was Fenwick late?"),
               Turn(role=A, text="The compressor failed its cold tests."),
               Turn(role=U, text="Did Fenwick lose money?"),
               Turn(role=A, text="Sales grew slowly at first.")]
    assert form("What other models were added?", history) == "What other models were added? Fenwick Aura heat pump"
    assert form("Was it sold abroad?", history) == "Was Fenwick Aura heat pump sold abroad?"


def test_a_predicate_before_an_appositive_is_never_copied_as_a_term() -> None:
    history = [Turn(role=U, text="Jonas Ek. Later career"),
               Turn(role=A, text="In 1981 he was traded, a decision that angered the fans of the club.")]
    said = form("Did he agree with that?", history)
    assert "traded" not in said and "1981" not in said


def test_a_step_told_as_a_command_is_put_in_as_a_gerund() -> None:
    history = [Turn(role=U, text="How do I descale a kettle?"),
               Turn(role=A, text="First, fill the kettle halfway with white vinegar. Second, boil the water and let it stand "
                                 "for an hour. Finally, rinse the kettle twice with clean water.")]
    assert form("Is lemon juice better than the first one?", history) == (
        "Is lemon juice better than filling the kettle halfway with white vinegar?")


def test_a_work_named_like_a_person_is_no_person_and_he_takes_its_maker() -> None:
    answer = "Silent Harbour (1951) was directed by Martin Keller, a Viennese filmmaker. Anna Roth was killed by a storm."
    assert [p.name for p in answer_people(answer)] == ["Martin Keller", "Anna Roth"]
    history = [Turn(role=U, text="Which harbour dramas should I watch?"),
               Turn(role=A, text="Start with the classics of the 1950s."),
               Turn(role=U, text="Who directed the first one?"),
               Turn(role=A, text="Lonely Pier was written by Clara Stein and directed by her brother.")]
    assert "Lonely Pier" not in form("What else did she write?", history)
