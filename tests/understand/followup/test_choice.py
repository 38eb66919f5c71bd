"""The learnt choice (#34): the words offered and what is said of them, how kept words make the
searched text, the packaged model, and that retraining on the same rows gives the same model.
Invented examples."""

from __future__ import annotations

import math

import pytest

from querywise.conversation import as_turns
from querywise.text import analyze
from querywise.understand.followup import check_follow_up
from querywise.understand.followup.choice import PhraseModel, Trees, decide, phrase_model
from querywise.understand.followup.tracker import Referent, Standalone
from querywise.understand.followup.words import Word, compose_words, offered_words


def _word(surface: str) -> Word:
    return Word(analyze(surface)[0], surface, {})


def test_the_packaged_model_reads_exactly_the_features_the_pipeline_computes() -> None:
    model = phrase_model()
    message = "Why did it close?"
    names = set(offered_words(message, as_turns(["Tell me about the Erie Canal."]), Standalone(message, "none", ()), [], [])[0].features)
    assert set(model.features) == names  # a renamed feature would otherwise read 0, silently
    assert 0.0 < model.threshold < 1.0 and model.cap >= 1
    assert "phrase_choice" in str(model.provenance["command"]) and "left out" in str(model.provenance["choice"])


def test_every_word_of_the_conversation_is_offered_with_where_it_was_said() -> None:
    history = as_turns(["Someone stole the catalytic converter from my Honda overnight. What should I do first?",
                        {"role": "assistant", "text": "Report the theft to the police and get a crime reference number. "
                                                      "Then call your insurer; comprehensive cover usually pays."},
                        "does insurance cover it?"])
    message = "how long does the claim take"
    offered = {w.term: w for w in offered_words(message, history, Standalone(message, "none", ()), [], [])}
    assert "take" not in offered and "claim" not in offered  # the message's own words add nothing
    converter, police, insurance = offered["convert"], offered["polic"], offered["insur"]
    assert converter.features["first_user"] == 1.0 and converter.features["from_answer"] == 0.0
    assert police.features["from_user"] == 0.0 and police.features["last_answer"] == 1.0 and police.features["answer_opening"] == 1.0
    assert insurance.features["previous_user"] == 1.0 and insurance.features["first_user"] == 0.0
    assert offered["honda"].features["capital"] == 1.0 and offered["honda"].surface == "Honda"
    assert offered["report"].features["capital"] == 0.0  # capitalised only as a sentence's first word


def test_kept_words_go_beside_the_message_in_the_conversations_order() -> None:
    message = "how long does the claim take"
    words = [_word("catalytic"), _word("converter"), _word("police"), _word("Honda")]
    form = Standalone(message, "none", ())
    assert compose_words(message, form, message, words, [True, True, False, True]) == f"{message} catalytic converter Honda"
    assert compose_words(message, form, message, words, [False] * 4) == message


def test_the_rules_pronoun_stays_replaced_only_when_every_word_it_brought_is_kept() -> None:
    message = "Would I owe tax on it?"
    form = Standalone("Would I owe tax on the backdoor conversion?", "placed", (Referent("the backdoor conversion", "phrase", ("backdoor", "convers")),))
    words = [_word("backdoor"), _word("conversion"), _word("Roth")]
    placed = form.text
    assert compose_words(message, form, placed, words, [True, True, False]) == "Would I owe tax on the backdoor conversion?"
    assert compose_words(message, form, placed, words, [True, True, True]) == "Would I owe tax on the backdoor conversion? Roth"
    # One of its words dropped: the pronoun stays as typed and the kept words go beside it.
    assert compose_words(message, form, placed, words, [True, False, True]) == "Would I owe tax on it? backdoor Roth"


def test_the_chance_is_the_logistic_of_the_leaves_each_tree_reaches() -> None:
    # Tree 0: cosine <= 0.5 -> -1.0, else 2.0. Tree 1: by_rules <= 0.5 -> 0.0, else (cosine <= 0.8 -> 0.5, else 1.0).
    trees = Trees(roots=[0, 3], feature=[0, 0, 0, 1, 0, 0, 0, 0], threshold=[0.5, 0, 0, 0.5, 0, 0.8, 0, 0],
                  left=[1, 1, 2, 4, 4, 6, 6, 7], right=[2, 1, 2, 5, 4, 7, 6, 7], value=[0, -1.0, 2.0, 0, 0.0, 0, 0.5, 1.0])
    model = PhraseModel(features=["cosine", "by_rules"], baseline=-0.5, trees=trees, threshold=0.5)
    assert trees.depth == 2

    def logistic(z: float) -> float:
        return 1 / (1 + math.exp(-z))

    got = model.chances([{"cosine": 0.2, "by_rules": 0.0}, {"cosine": 0.7, "by_rules": 1.0}, {"cosine": 0.9, "by_rules": 1.0}, {}])
    assert got == pytest.approx([logistic(-1.5), logistic(2.0), logistic(2.5), logistic(-1.5)])  # a feature not given reads 0
    assert model.chances([]) == [] and PhraseModel(features=[], baseline=1.0, threshold=0.5).chances([{}]) == [pytest.approx(logistic(1.0))]


def test_a_model_whose_trees_do_not_hold_together_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="outside the 3 nodes"):
        Trees(roots=[0], feature=[0, 0, 0], threshold=[0.5, 0, 0], left=[1, 1, 2], right=[3, 1, 2], value=[0, 1, 2])
    with pytest.raises(ValidationError, match="before its node"):  # a loop: the walk would never reach a leaf
        Trees(roots=[0], feature=[0, 0, 0], threshold=[0.5, 0.5, 0], left=[1, 0, 2], right=[2, 2, 2], value=[0, 0, 2])
    with pytest.raises(ValidationError, match="a root outside"):
        Trees(roots=[3], feature=[0], threshold=[0], left=[0], right=[0], value=[0])
    with pytest.raises(ValidationError, match="every node"):
        Trees(roots=[0], feature=[0], threshold=[], left=[0], right=[0], value=[0])
    split = Trees(roots=[0], feature=[1, 0, 0], threshold=[0.5, 0, 0], left=[1, 1, 2], right=[2, 1, 2], value=[0, 1, 2])
    with pytest.raises(ValidationError, match="outside the 1 named"):
        PhraseModel(features=["cosine"], baseline=0.0, trees=split, threshold=0.5)
    assert PhraseModel(features=["cosine", "by_rules"], baseline=0.0, trees=split, threshold=0.5).chances([{"by_rules": 1.0}]) == [pytest.approx(1 / (1 + math.exp(-2.0)))]


def test_decide_keeps_the_likeliest_up_to_the_cap_and_the_floor_keeps_one() -> None:
    assert decide([0.9, 0.8, 0.7], 0.5, cap=2) == [True, True, False]
    assert decide([0.3, 0.45], 0.5) == [False, False]  # no floor: nothing kept
    assert decide([0.3, 0.45], 0.5, floor=0.4) == [False, True]


def test_the_packaged_model_keeps_the_rules_name_and_drops_the_answers_other_words() -> None:
    from querywise.embed import load_embedder
    from querywise.understand.followup.standalone import standalone_form

    history = ["What is the Hanseatic League?",
               "The Hanseatic League was a network of merchant guilds and market towns in northern Europe. "
               "It ran trading posts called kontors in London, Bruges, Bergen and Novgorod."]
    turns = as_turns([history[0], {"role": "assistant", "text": history[1]}])
    message = "Why did the league decline?"
    gate = check_follow_up(message, turns)
    text, chances = phrase_model().choose(message, turns, standalone_form(message, turns, gate), embedder=load_embedder("onnx", cache_dir=None))
    assert "Hanseatic" in text and "trading" not in text and "Europe" not in text and "kontors" not in text
    assert chances[0][0] == "Hanseatic" and chances[0][1] > phrase_model().threshold


def test_retraining_on_the_same_rows_gives_the_same_model() -> None:
    from bench.training.phrase_choice import train

    items = []
    for n in range(12):  # twelve conversations, three words each: the one the rules carried is the person's
        message = "Why did it close?"
        words = [{"term": f"canal{n}", "surface": f"canal{n}", "features": {"in_form": 1.0, "answer_only": 0.0, "phrase_cosine": 0.6 + n / 100}},
                 {"term": f"nois{n}", "surface": f"noise{n}", "features": {"in_form": 0.0, "answer_only": 1.0, "phrase_cosine": 0.2}},
                 {"term": f"lock{n}", "surface": f"lock{n}", "features": {"in_form": 0.0, "answer_only": 0.0, "phrase_cosine": 0.3}}]
        items.append({"source": ("passages", "train", "read")[n % 3], "conversation": f"c{n}", "message": message, "answered": True,
                      "standalone": f"Why did canal{n} close?", "old": f"Why did canal{n} close? noise{n}",
                      "form": {"text": f"Why did canal{n} close? noise{n}", "method": "appended", "answer": "", "placed": message},
                      "words": words})
    small = {"max_iter": 20, "learning_rate": 0.3, "max_leaf_nodes": 4, "min_samples_leaf": 2}  # 36 words, not 600,000
    first, figures = train(items, thresholds=(0.5,), caps=(99,), boosting=small)
    again, _ = train(items, thresholds=(0.5,), caps=(99,), boosting=small)
    assert first == again and len(first.trees.roots) == 20
    kept, noise, other = first.chances([w["features"] for w in items[0]["words"]])
    assert kept > 0.5 > max(noise, other)  # it learnt which word the person kept
    assert figures["chosen"]["answered"]["precision"] == 1.0 > figures["rules"]["answered"]["precision"]  # the noise dropped, out of file


def test_the_default_runs_the_choice_only_after_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from querywise.embed import load_embedder
    from querywise.understand.followup import move
    from querywise.understand.followup.choice import answered_before

    # A model that keeps every candidate (at most 2): wherever the choice runs, it changes the form.
    monkeypatch.setattr(move, "phrase_model", lambda: PhraseModel(features=[], baseline=10.0, threshold=0.5, cap=2))
    embedder = load_embedder("onnx", cache_dir=None)
    message = "Why did the league decline?"
    users_only = as_turns(["What is the Hanseatic League?", "Which towns belonged to it?"])
    answered = as_turns(["What is the Hanseatic League?", {"role": "assistant", "text":
                         "The Hanseatic League was a network of merchant guilds and market towns in northern Europe. "
                         "It ran trading posts called kontors in London, Bruges, Bergen and Novgorod."}])
    assert not answered_before(users_only) and answered_before(answered)

    def moved(history: object, how: str) -> tuple[str, str]:
        out = move.follow_up(message, history, catalog=None, embedder=embedder, phrase_choice=how)  # type: ignore[arg-type]
        return out.text, f"{out.step.reason} {out.step.changed}"  # not its latency

    # User turns only (CAsT's histories): "answers" leaves the rules' form and trace as they were.
    assert moved(users_only, "answers") == moved(users_only, "off") != moved(users_only, "always")
    # After an answer the choice runs, and the trace says so.
    assert moved(answered, "answers") == moved(answered, "always") != moved(answered, "off")
    assert "learnt model" in moved(answered, "answers")[0] + moved(answered, "answers")[1]


def test_when_the_model_keeps_no_word_the_message_is_searched_as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    from querywise.embed import load_embedder
    from querywise.understand.followup import move

    # A model that keeps nothing: the answer's words were weighed one by one, so they are not searched beside it either.
    monkeypatch.setattr(move, "phrase_model", lambda: PhraseModel(features=[], baseline=-10.0, threshold=0.5))
    embedder = load_embedder("onnx", cache_dir=None)
    message = "What about in winter?"
    history = as_turns(["Which birds visit the Wadden Sea?", {"role": "assistant", "text":
                        "Knots and bar-tailed godwits stop over on the Wadden Sea's mudflats on their way north."}])
    kept_none = move.follow_up(message, history, catalog=None, embedder=embedder, phrase_choice="answers")
    assert kept_none.text == message and kept_none.beside == ()
    assert "kept none" in kept_none.step.reason
    rules = move.follow_up(message, history, catalog=None, embedder=embedder, phrase_choice="off")
    assert rules.text != message or rules.beside  # the rules alone carry something in, or the answer beside
