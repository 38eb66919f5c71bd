"""The learnt phrase choice (#34): the packaged model, how kept candidates make the form, and that
retraining on the same rows gives the same model. Invented examples."""

from __future__ import annotations

import math

import pytest

from querywise.text import analyze
from querywise.understand.followup import check_follow_up
from querywise.understand.followup.choice import Candidate, PhraseModel, compose, decide, phrase_features, phrase_model
from querywise.understand.followup.tracker import Referent, Standalone


def _candidate(text: str, **kw: object) -> Candidate:
    terms = tuple(analyze(text))
    return Candidate(text, terms, frozenset(terms), "phrase", **kw)  # type: ignore[arg-type]


def test_the_packaged_model_reads_exactly_the_features_the_pipeline_computes() -> None:
    model = phrase_model()
    gate = check_follow_up("Why did it close?", ["Tell me about the Erie Canal."])
    names = set(phrase_features("Why did it close?", gate, [_candidate("Erie Canal")], [0.5])[0])
    assert set(model.weights) == names  # a renamed feature would otherwise weigh nothing, silently
    assert 0.0 < model.threshold < 1.0 and model.cap >= 1
    assert "phrase_choice" in str(model.provenance["command"]) and "by conversation" in str(model.provenance["choice"])


def test_the_chance_is_the_logistic_of_the_weighted_features() -> None:
    model = PhraseModel(weights={"cosine": 2.0, "by_rules": 1.0}, intercept=-1.0, threshold=0.5)
    assert model.chance({"cosine": 0.5, "by_rules": 1.0}) == 1 / (1 + math.exp(-1.0))
    assert model.chance({}) == 1 / (1 + math.exp(1.0))  # a feature not given weighs nothing


def test_decide_keeps_the_likeliest_up_to_the_cap_and_the_floor_keeps_one() -> None:
    assert decide([0.9, 0.8, 0.7], 0.5, cap=2) == [True, True, False]
    assert decide([0.3, 0.45], 0.5) == [False, False]  # no floor: nothing kept
    assert decide([0.3, 0.45], 0.5, floor=0.4) == [False, True]


def test_a_kept_answer_phrase_goes_beside_the_message() -> None:
    # The rules carried nothing the model keeps; the answer's "topiramate" is kept: it goes after the message.
    message = "Tell me more about the second one."
    form = Standalone(f"{message} preventing migraines", "appended", (Referent("preventing migraines", "phrase", ("prevent", "migrain")),))
    found = [_candidate("preventing migraines", by_rules=True), _candidate("topiramate", from_answer=1)]
    assert compose(message, form, found, [True, True]) == f"{message} preventing migraines topiramate"
    assert compose(message, form, found, [False, True]) == f"{message} topiramate"


def test_a_dropped_placed_referent_gives_the_message_back() -> None:
    # "it" replaced by a wrong phrase: when the model does not keep it, the pronoun stays as typed.
    message = "Would I owe tax on it?"
    wrong = Referent("income", "phrase", ("incom",))
    form = Standalone("Would I owe tax on income?", "placed", (wrong,))
    found = [_candidate("income", by_rules=True, placed=True), _candidate("backdoor conversion", from_user=1)]
    assert compose(message, form, found, [True, False]) == "Would I owe tax on income?"
    assert compose(message, form, found, [False, True]) == "Would I owe tax on it? backdoor conversion"
    assert compose(message, form, found, [False, False]) == message


def test_the_packaged_model_keeps_the_rules_name_and_drops_a_sentence_fragment() -> None:
    from querywise.embed import load_embedder
    from querywise.understand.followup.standalone import standalone_form

    history = ["What is the Hanseatic League?",
               "The Hanseatic League was a network of merchant guilds and market towns in northern Europe. "
               "It ran trading posts called kontors in London, Bruges, Bergen and Novgorod."]
    from querywise.conversation import as_turns

    turns = as_turns([history[0], {"role": "assistant", "text": history[1]}])
    message = "Why did the league decline?"
    gate = check_follow_up(message, turns)
    text, chances = phrase_model().choose(message, turns, standalone_form(message, turns, gate), gate, embedder=load_embedder("onnx", cache_dir=None))
    assert "Hanseatic" in text and "trading posts" not in text and "northern Europe" not in text
    assert chances[0][0].endswith("Hanseatic League") and chances[0][1] > phrase_model().threshold


def test_retraining_on_the_same_rows_gives_the_same_model() -> None:
    from bench.training.phrase_choice import train

    gate = check_follow_up("Why did it close?", ["Tell me about the Erie Canal."])
    items = []
    for n in range(10):  # ten conversations, two candidates each: the right one carries the person's term
        found = [_candidate(f"canal{n}", by_rules=True, from_user=1), _candidate(f"noise{n}", from_answer=1)]
        feats = phrase_features("Why did it close?", gate, found, [0.6 + n / 100, 0.2])
        items.append({"source": "passages" if n % 2 else "cast2019", "conversation": f"c{n}", "message": "Why did it close?",
                      "standalone": f"Why did canal{n} close?", "old": f"Why did canal{n} close? noise{n}",
                      "form": {"text": f"Why did canal{n} close? noise{n}", "method": "appended", "answer": ""},
                      "candidates": [{"text": c.text, "key": list(c.key), "new_terms": sorted(c.new_terms), "placed": False,
                                      "previous_turn": False, "features": f} for c, f in zip(found, feats, strict=True)]})
    first, _ = train(items, cs=(1.0,), thresholds=(0.5,))
    again, _ = train(items, cs=(1.0,), thresholds=(0.5,))
    assert first == again
    assert first.weights["by_rules"] > 0 > first.weights["from_answer"]  # it learnt which candidate the person kept


def test_the_default_runs_the_choice_only_after_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from querywise.conversation import as_turns
    from querywise.embed import load_embedder
    from querywise.understand.followup import move
    from querywise.understand.followup.choice import answered_before

    # A model that keeps every candidate (at most 2): wherever the choice runs, it changes the form.
    monkeypatch.setattr(move, "phrase_model", lambda: PhraseModel(weights={}, intercept=10.0, threshold=0.5, cap=2))
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
