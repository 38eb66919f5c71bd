"""The learnt word choice's traits that tell a situation's topic from its story (#34): how common a
word is in English (`rarity.py`), and how often the whole conversation says it. Invented examples."""

from __future__ import annotations

import math

from querywise.conversation import as_turns
from querywise.understand.followup.tracker import Standalone
from querywise.understand.followup.word_traits import Places, Recurrence
from querywise.understand.followup.words import offered_words

_SITUATION = as_turns([
    "My aunt moved into a retirement flat last spring. She says the landlord keeps raising the ground rent. Is a leasehold tribunal worth it?",
    {"role": "assistant", "text": "A leasehold tribunal can rule on whether a ground rent rise is reasonable."},
    "How long does it take?",
    {"role": "assistant", "text": "Most cases take four to six months."},
    "What does it cost?",
    {"role": "assistant", "text": "The tribunal fee is modest, and the leasehold valuation is the larger cost."},
])


def test_the_whole_conversation_counts_every_answer_and_the_topic_is_the_first_turns_echoed_word() -> None:
    whole = Recurrence(_SITUATION)
    leasehold, aunt, rent = whole.features("leasehold"), whole.features("aunt"), whole.features("rent")
    # Every answer, not only the last two: the first and the third say "leasehold".
    assert leasehold["log_answers_all"] == math.log1p(2) and leasehold["answer_share_all"] == 2 / 3
    assert leasehold["log_turns_all"] == math.log1p(3) and leasehold["first_echoed"] == 1.0
    assert aunt["first_echoed"] == 0.0 and aunt["log_answers_all"] == 0.0  # the story: no answer takes it up
    assert rent["first_echoed"] == 1.0 and rent["log_turns_all"] == math.log1p(2)  # the first turn and the first answer


def test_offered_words_carry_the_traits() -> None:
    message = "Can she appeal?"
    offered = {w.term: w for w in offered_words(message, _SITUATION, Standalone(message, "none", ()), [], [])}
    tribunal, says = offered["tribun"].features, offered["say"].features
    assert tribunal["rarity"] > says["rarity"] and tribunal["rarity_user"] == tribunal["rarity"]  # said by the user
    # The first answer is three answers back: `words.py`'s last two miss it, the whole conversation does not.
    assert tribunal["log_answer_mentions"] == math.log1p(1) and tribunal["log_answers_all"] == math.log1p(2)
    assert tribunal["first_echoed"] == 1.0 and says["first_echoed"] == 0.0



def test_a_place_is_a_name_the_story_happened_in_and_a_month_is_none() -> None:
    places = Places(as_turns([
        "We adopted a rescue greyhound in Leeds in September. He howls every night. What can we do?",
        {"role": "assistant", "text": "Rescue greyhounds in Yorkshire often howl at first."},
        "would a second dog help",
    ]))
    assert places.features("leed") == {"place": 1.0}
    assert places.features("septemb") == {"place": 0.0}  # "in September": a time
    assert places.features("greyhound") == {"place": 0.0}
    assert places.features("yorkshir") == {"place": 0.0}  # the answer's place: not where the user's story is
