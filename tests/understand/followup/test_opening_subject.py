"""The conversation's subject as people open a conversation (#34): the verb read off the sentence's
shape, never taken for the topic; names over accented letters and their joiners; the question's
topic before the context sentence that leads to it; a period never the topic. Invented examples."""

from __future__ import annotations

from querywise.understand.followup import conversation_subject


def test_a_possessive_subjects_verb_is_no_part_of_it() -> None:
    assert conversation_subject(["My landlord wants a deposit of two months."]) == "landlord"
    assert conversation_subject(["My 2009 Subaru Outback burns oil between changes."]) == "2009 Subaru Outback"
    assert conversation_subject(["Our cellar floods after heavy rain."]) == "cellar"


def test_a_reported_clause_is_the_subject_not_who_reports_it() -> None:
    assert conversation_subject(["My vet thinks my horse has colic."]) == "horse"
    assert conversation_subject(["My physio says I have tennis elbow."]) == "tennis elbow"


def test_a_gerund_or_progressive_verb_is_not_the_topic() -> None:
    assert conversation_subject(["Is it worth insulating my loft with sheep wool?"]) == "loft"
    assert conversation_subject(["I'm restoring an old oak dresser."]) == "oak dresser"
    assert conversation_subject(["We're thinking of adopting a ferret."]) == "ferret"
    assert conversation_subject(["I want to start climbing with a local club."]) == "local club"


def test_a_copula_questions_progressive_verb_ends_its_subject() -> None:
    assert conversation_subject(["Why are coral reefs losing their colour?"]) == "coral reefs"
    assert conversation_subject(["There's green algae growing in my pond."]) == "green algae"


def test_an_object_keeps_its_last_word() -> None:
    # Only a question's subject, straight after its auxiliary, ends on a predicate.
    assert conversation_subject(["Why do we have leap seconds?"]) == "leap seconds"
    assert conversation_subject(["Can you ride the Glacier Express in winter?"]) == "the Glacier Express"
    assert conversation_subject(["How do you become a licensed marine surveyor?"]) == "licensed marine surveyor"


def test_names_run_over_accented_letters_and_their_joiners() -> None:
    assert conversation_subject(["What did Åsa Lindström write?"]) == "Åsa Lindström"
    assert conversation_subject(["What was the Siege of Malta?"]) == "the Siege of Malta"
    assert conversation_subject(["Tell me about the Fall of the Berlin Wall."]) == "the Fall of the Berlin Wall"
    assert conversation_subject(["How long is the Camino Via 2 trail?"]) == "the Camino Via 2 trail"
    assert conversation_subject(["Who won the Battle on Ice?"]) == "the Battle on Ice"


def test_the_question_names_the_topic_before_its_context() -> None:
    assert conversation_subject(["My knee clicks when I climb stairs. Could it be runner's knee?"]) == "runner's knee"
    assert conversation_subject(["I sit at a desk all day. Would a standing desk help?"]) == "standing desk"


def test_the_context_stays_when_the_question_names_nothing_of_its_own() -> None:
    # A predicate ("is that normal?"), the speaker's own ("my landlord"), what the context named
    # ("the roots"), an infinitive's object, or whom it is for: the context sentence is the subject.
    assert conversation_subject(["Our fig tree dropped all its fruit. Is that normal?"]) == "fig tree"
    assert conversation_subject(["There's damp behind my wardrobe. Is my landlord responsible?"]) == "damp"
    assert conversation_subject(["We planted a willow near the house. Can I cut the roots?"]) == "willow"
    assert conversation_subject(["I want to learn the cello. Is it too late to hire a teacher?"]) == "the cello"


def test_a_period_is_when_not_what() -> None:
    assert conversation_subject(["What caused the oil crisis in the 1970s?"]) == "the oil crisis"
    assert conversation_subject(["Why did cotton prices collapse in the 1850s?"]) == "cotton prices"


def test_a_wh_words_noun_is_asked_of_the_subject() -> None:
    assert conversation_subject(["How many Grand Slam titles did Chris Evert win?"]) == "Chris Evert"
    assert conversation_subject(["What is the best treatment for shin splints?"]) == "shin splints"
    assert conversation_subject(["What remedies exist for hiccups?"]) == "hiccups"


def test_words_glued_to_a_phrases_edge_are_no_part_of_it() -> None:
    assert conversation_subject(["Is a heat pump worth it?"]) == "heat pump"
    assert conversation_subject(["Someone scratched my Tesla overnight. What should I do?"]) == "Tesla"
    assert conversation_subject(["I'm going back to university. What should I expect?"]) == "university"
    # How old the thing is, lower-case, is not its name; a name's "Old" is.
    assert conversation_subject(["I bought an old sewing machine. Can I oil it?"]) == "sewing machine"
    assert conversation_subject(["How often does Old Faithful erupt?"]) == "Old Faithful"


def test_an_abbreviated_title_ends_no_sentence() -> None:
    assert conversation_subject(["Who directed The Cabinet of Dr. Caligari?"]) == "the Cabinet of Dr. Caligari"
    assert conversation_subject(["When was St. Paul's Cathedral built?"]) == "St. Paul's Cathedral"
