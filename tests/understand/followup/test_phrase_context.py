"""Where a candidate phrase sits in the conversation (#34's learned choice): each feature family on
a made-up conversation whose value is known by reading it."""

from __future__ import annotations

import math

from querywise.conversation import as_turns
from querywise.text import analyze
from querywise.understand.followup import check_follow_up
from querywise.understand.followup.choice import Candidate, phrase_features
from querywise.understand.followup.phrase_context import answer_sentences, context_features, message_shape, sentence_cosines

ANSWER = ("The Hanseatic League was a network of merchant guilds in northern Europe. "
          "It ran trading posts in London, Bruges, Bergen and Novgorod. "
          "Its members traded goods such as timber and furs. The league declined after 1450.")
HISTORY = as_turns(["What was the Hanseatic League?", {"role": "assistant", "text": ANSWER}])


def _found(*texts: str) -> list[Candidate]:
    return [Candidate(t, tuple(analyze(t)), frozenset(analyze(t)), "phrase", from_answer=1) for t in texts]


def _features(message: str, texts: tuple[str, ...], cosines: list[float] | None = None, sentences: dict[str, float] | None = None) -> dict[str, dict[str, float]]:
    found = _found(*texts)
    rows = context_features(message, HISTORY, found, cosines or [0.0] * len(found), sentences or {})
    return dict(zip(texts, rows, strict=True))


def test_a_phrase_that_opens_its_sentence_is_its_subject_and_a_listed_one_is_not() -> None:
    f = _features("Why did it decline?", ("Hanseatic League", "merchant guilds", "Bruges", "timber", "trading posts"))
    assert f["Hanseatic League"]["x_opens"] == 1.0 and f["Hanseatic League"]["x_listed"] == 0.0
    assert f["Bruges"]["x_listed"] == 1.0 and f["Bruges"]["x_opens"] == 0.0  # "London, Bruges, Bergen"
    assert f["timber"]["x_listed"] == 1.0  # after "such as"
    assert f["merchant guilds"]["x_opens"] == 0.0 and f["merchant guilds"]["x_listed"] == 0.0
    assert f["trading posts"]["x_opens"] == 0.0  # "It ran trading posts": the object, not the subject
    assert f["Hanseatic League"]["x_opens_answer"] == 1.0 and f["Hanseatic League"]["x_in_answer_text"] == 1.0


def test_heads_shared_typed_repeated_and_the_phrase_length() -> None:
    f = _features("Why did it decline?", ("Hanseatic League", "merchant guilds", "northern Europe", "trade league"))
    # Two candidates end in "league": each has one other sharing its head; a user typed "league".
    assert f["Hanseatic League"]["x_log_same_head"] == f["trade league"]["x_log_same_head"] == math.log1p(1)
    assert f["merchant guilds"]["x_log_same_head"] == 0.0
    assert f["Hanseatic League"]["x_head_typed"] == 1.0 and f["merchant guilds"]["x_head_typed"] == 0.0
    assert f["merchant guilds"]["x_log_terms"] == math.log1p(2)
    # "league" is said twice in the answer, the others once: the most repeated phrase is the league.
    assert f["Hanseatic League"]["x_most_repeated"] == 1.0 and f["northern Europe"]["x_most_repeated"] == 0.0
    assert f["Hanseatic League"]["x_log_repeats"] == math.log1p(2)
    assert f["Hanseatic League"]["x_log_answers"] == math.log1p(1)


def test_the_cosine_rank_counts_only_the_answers_phrases() -> None:
    found = _found("Hanseatic League", "merchant guilds", "Bruges")
    found[0].from_answer = 0  # said by the user only: not ranked among the answer's phrases
    rows = context_features("Why did it decline?", HISTORY, found, [0.9, 0.5, 0.3], {})
    assert rows[1]["x_answer_cos_top"] == 1.0 and rows[1]["x_log_answer_cos_rank"] == 0.0
    assert rows[2]["x_log_answer_cos_rank"] == math.log1p(1)
    assert rows[0]["x_answer_cos_top"] == 0.0 and rows[0]["x_log_answer_cos_rank"] == math.log1p(20)


def test_what_the_message_asks_is_read_from_its_function_words() -> None:
    assert message_shape("How long did it last?")["x_property"] == 1.0
    assert message_shape("What is the population of the second one?")["x_property"] == 1.0
    assert message_shape("Which one is older?")["x_pick"] == 1.0 and message_shape("Tell me about the third.")["x_pick"] == 1.0
    assert message_shape("Why did it decline?") == {"x_property": 0.0, "x_pick": 0.0, "x_alone": 0.0, "x_log_own_terms": math.log1p(len(analyze("Why did it decline?")))}
    assert message_shape("What did Novgorod merchants sell in Bruges?")["x_alone"] == 1.0  # no pointer, words of its own
    f = _features("Which one was biggest?", ("Bruges",))
    assert f["Bruges"]["x_pick_answer"] == 1.0 and f["Bruges"]["x_alone_answer"] == 0.0


def test_the_sentence_a_phrase_sits_in_brings_its_cosine_to_the_message() -> None:
    from querywise.embed import load_embedder

    sentences = sentence_cosines("When did the league fall into decline?", HISTORY, load_embedder("onnx", cache_dir=None))
    assert list(sentences) == answer_sentences(HISTORY) and len(sentences) == 4
    best = max(sentences, key=lambda s: sentences[s])
    assert best == "The league declined after 1450."
    f = _features("When did the league fall into decline?", ("1450", "Bruges"), sentences=sentences)
    assert f["1450"]["x_sentence_top"] == 1.0 and f["1450"]["x_sentence_cos"] == sentences[best] and f["1450"]["x_sentence_gap"] == 0.0
    assert f["Bruges"]["x_sentence_top"] == 0.0 and f["Bruges"]["x_sentence_gap"] > 0.0
    assert answer_sentences(as_turns(["What was the Hanseatic League?"])) == []  # no answer last: nothing to compare


def test_the_choice_reads_the_context_features_only_with_the_history() -> None:
    gate = check_follow_up("Why did it decline?", HISTORY)
    found = _found("Bruges")
    assert not any(k.startswith("x_") for k in phrase_features("Why did it decline?", gate, found, [0.2])[0])
    with_history = phrase_features("Why did it decline?", gate, found, [0.2], history=HISTORY)[0]
    assert with_history["x_listed"] == 1.0 and with_history["cosine"] == 0.2
