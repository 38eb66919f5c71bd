"""The follow-up move as a plan runs it: the gate, the topic-shift check, the standalone form and
its guard, and what is searched -- the form instead of the message, beside it, leading it, or
the message as typed -- with the trace step that says why.

A pointer (a pronoun, "and the Pro?") replaces the message by its standalone form; a
description that needs an anchor ("the address", "what kind?") is weaker evidence, and also how
new subjects open: the message is kept, its form searched beside it at weight 1; topic
continuity alone weaker still (`WEAK_FORM_WEIGHT`). The topic-shift check's chance of a new
subject hedges each (`ShiftModel.searched`); at its threshold the message is searched as typed.
Beside the form: each other reading when two candidates fit the pointer, and, when the message
replies to an answer, the form with the answer's words after it (`ANSWER_WEIGHT`). A form replaces
the message only on a referent the deployment knows (`sure_referents`: a catalog product, an
identifier, a model name); a referent guessed from the words keeps the message as typed beside
its form (`GUESSED_MESSAGE_WEIGHT`, `JOINED_MESSAGE_WEIGHT`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, NamedTuple

import numpy as np

from querywise.catalog import Catalog
from querywise.checks.guard import check_rewrite
from querywise.clock import ms_since
from querywise.conversation import Turn, texts
from querywise.embed import Embedder
from querywise.plan import DriftGuard, PlanQuery, QueryKind, Status, TraceStep
from querywise.understand.followup.choice import answered_before, phrase_model
from querywise.understand.followup.gate import WEAK_FORM_WEIGHT, FollowUp, check_follow_up, flag_kind, points_back
from querywise.understand.followup.lean import asks_unanswered
from querywise.understand.followup.shift import Searched, compared_texts, shift_features, shift_model
from querywise.understand.followup.standalone import Standalone, concat_standalone, names_its_subject, standalone_form
from querywise.understand.followup.tracker import Referent, Tracker

__all__ = ["ANSWER_MAX_CHANCE", "ANSWER_WEIGHT", "DRIFT_AWAY", "DRIFT_CLARITY", "GUESSED_MESSAGE_WEIGHT", "JOINED_MESSAGE_WEIGHT", "Followed", "PointerReading", "follow_up", "shift_chance",
           "sure_referents"]

#: The RRF weight of the form with the answer's words after it, relative to the form's own, when
#: the message more likely continues the answer than opens a new subject (the topic-shift check's
#: chance under `ANSWER_MAX_CHANCE`); at or over it, the answer's query weighs as the form. Chosen on
#: doc2dial's train documents (bench/understanding/followup_recall.py): follow-up slice recall@5
#: 0.560 at weight 1, 0.617 at 10; a change of subject after an answer 0.733 and 0.720 (as typed 0.751).
#: This query carries most of what the move earns and most of what a change of subject after an
#: answer loses (bench/results/subject_probe.md, train documents: it alone undoes 193 of 381 wins
#: and 7 of 11 losses; the follow-up slice 0.642 with it, 0.505 without, all documents). No weight
#: tried there (1 to 10, flat or by the topic-shift chance, the message kept beside it at up to 3, its
#: top hit kept in the top 5) keeps a change of subject after an answer within 0.01 and the follow-up
#: slice at 0.62: this step is the train documents' best point that holds the follow-up target.
#: Nor does weighing it by how the message relates to the answer (a reply or continuation word, a
#: word of the answer, two words or fewer; its cosine to the answer; the topic-shift chance): the
#: train documents' one rule meeting both targets there (x10 when the message leans on the answer
#: under chance 0.6, else no answer query: 0.622 / -0.010) loses 0.031 of the follow-ups on val
#: (SE 0.011) and 0.015 after an answer on test (subject_probe.md, paired standard errors). Nor,
#: a third round, does the retriever's own word: train's choice (no answer query when the message
#: alone finds something clearly and the answer query's first hit is far from it, or after a
#: question of the assistant the message does not lean on) holds train and val and loses 0.015
#: after an answer on test (SE 0.010), the follow-ups 0.667 there (subject_probe.md, section 4).
#: That rule ships beside this weight (`DRIFT_CLARITY`, `DRIFT_AWAY`, `asks_unanswered`).
ANSWER_WEIGHT = 10.0
#: The answer query's drift guard (`plan.DriftGuard`, measured by execute on the message's dense
#: list): it is left out of the fusion when the message alone finds something clearly (its best
#: cosine at least `DRIFT_CLARITY` over its 50th) and the answer query's first hit is far from it
#: (the message's cosine to it at least `DRIFT_AWAY` under its best) -- the user has moved on. With
#: no answer query after a question of the assistant the message does not take up
#: (`asks_unanswered`), the train documents' choice among the rules that read the retriever's own
#: lists (bench/understanding/subject_probe.py, section 4: the largest gain after an answer on
#: train with the follow-up slice >= 0.62 on train, among clarity/drift 0.15/0.2, 0.2/0.1,
#: 0.2/0.15, 0.25/0.1): doc2dial follow-up slice 0.627 train, after an answer -0.008 (SE 0.008)
#: against the message as typed (-0.024 without it). As shipped (bench/results/conversations.md),
#: train / val / test: follow-ups 0.627 / 0.653 / 0.663, after an answer -0.008 / +0.000 / -0.015
#: (SE 0.010): test misses the 0.01 bar, reported, not re-picked. A fourth round cross-validated
#: within train a finer dense grid and guards reading the message's BM25 list: none beats this one
#: on train after an answer (the BM25 guard: -0.011 against -0.008, test -0.015 alike), so it stays
#: (bench/results/drift_probe.md: 6 train turns after an answer are the guard's whole headroom).
DRIFT_CLARITY = 0.2
DRIFT_AWAY = 0.15
#: More likely a continuation than a new subject: a natural point, not fitted (0.2, 0.3 and 0.4
#: trade follow-ups for changes of subject at the same rate as a lower weight: subject_probe.md).
ANSWER_MAX_CHANCE = 0.5
#: The RRF weight of the message as typed beside a pointer's form (weight 1) whose referent was
#: guessed from the conversation's words rather than known to the deployment (a catalog product,
#: an identifier, a model name): see `sure_referents`. Chosen on CAsT 2019 (rewrites as the corpus,
#: nDCG@10 of the follow-up slice over pass-through: +0.021 replacing, +0.034 at 1, +0.031 at 2) and
#: doc2dial's train documents (follow-up recall@5 0.617 replacing, 0.620 at 1, 0.618 at 2), both
#: measured with every pointer's form hedged (doc2dial has no catalog), taking the larger
#: weight where both are within noise: losing nothing the message found matters more than a
#: hundredth (#33). Reported on CAsT 2020: bench/results/defaults_gate.md.
GUESSED_MESSAGE_WEIGHT = 2.0
#: The same for the previous user turn put in front of the message (`concat_standalone`), which
#: already holds the message word for word, so the message beside it only has to keep a change of
#: subject from being buried, and a content-poor message ("any exceptions?") searched at equal
#: weight drags its noise in. Chosen on the demo deployment (demo-48's chunk at rank 3 at 0.25, 5 at
#: 0.5, 9 at 1; the reference help centre's ranks equal at all three), reported on CAsT 2019 / 2020
#: (follow-up slice over pass-through: +0.026 / +0.007 at 0.25, +0.028 / +0.005 at 1).
JOINED_MESSAGE_WEIGHT = 0.25
# A model code: letters and digits in one word ("X2", "A380", "777X"), a capitalised word then a
# number ("Solace 7"), or a capitalised word then a single capital ("Watch S").
_MODEL_CODE = re.compile(r"\b(?:[A-Za-z]+\d+|\d+[A-Za-z]+)[\w-]*\b|\b[A-Z][a-z]+ (?:\d+|[A-Z])\b")


class PointerReading(NamedTuple):
    """One candidate a pointer may mean ("it" after "Compare the A and the B"), and the message
    asked of it: what the ambiguity move covers, or offers as an option to send back."""

    candidate: str
    query: str


@dataclass(frozen=True)
class Followed:
    """What the move leaves the plan: the text later moves read, its kind, whether the message
    needs the conversation, queries to search next to it, its trace step, and the readings of a
    pointer with two or more candidates (none when it has one)."""

    text: str
    kind: QueryKind
    needs_context: bool
    step: TraceStep
    beside: tuple[PlanQuery, ...] = ()
    readings: tuple[PointerReading, ...] = ()


def follow_up(
    message: str, history: Sequence[Turn], *, catalog: Catalog | None, embedder: Embedder, topic_shift: bool = True, topic_window: int = 1,
    phrase_choice: Literal["off", "answers", "always"] = "answers",
) -> Followed:
    """The follow-up move on `message` after `history`. `embedder` serves the topic-shift check
    (`topic_shift`, over the last `topic_window` turns), which embeds only flagged messages, and
    the learnt phrase choice (`phrase_choice`, `choice.py`: "answers" runs it only after an
    assistant's answer, where it was shown to pay)."""
    started = time.perf_counter()

    def step(status: Status, reason: str, changed: str | None = None, details: dict[str, Any] | None = None) -> TraceStep:
        return TraceStep(move="follow_up", status=status, reason=reason, changed=changed, details=details or {},
                         latency_ms=ms_since(started))

    gate = check_follow_up(message, history, catalog=catalog)
    if not gate.needs_context:
        return Followed(message, "original", False, step("skipped", gate.reason))
    described = gate.strength == "strong" and not points_back(gate)
    shift = shift_chance(message, history, gate, catalog=catalog, embedder=embedder, window=topic_window) if topic_shift else None
    searched = shift_model().searched(None if shift is None else shift[0], pointer=gate.strength == "strong" and not described,
                                      base=1.0 if described else WEAK_FORM_WEIGHT)
    if shift is not None and searched.how == "as_typed":
        chance, similarity = shift
        # Still "needs the conversation": an LLM tier, which reads all of it, decides; the
        # deterministic plan searches the message as typed.
        return Followed(message, "original", True, step(
            "skipped", f"{gate.reason}; but a new subject (chance {chance:.2f} by the topic-shift check, "
                       f"{similarity:.2f} similar to the last turns): searched as typed",
            details={"cues": list(gate.cues), "chance": round(chance, 3), "similarity": round(similarity, 3)}))
    # The answer's words weigh up the more surely the message continues it: a reply to an answer is
    # about the passage it came from, but a new subject after an answer is not.
    scale = ANSWER_WEIGHT if shift is None or shift[0] < ANSWER_MAX_CHANCE else 1.0
    if described:
        gate = replace(gate, strength="weak", reason=f"{gate.reason} (a description, not a pointer: the message is kept)")
    said = texts(history)
    form = standalone_form(message, history, gate, catalog=catalog)
    guard = check_rewrite(message, form.text, said, catalog=catalog)
    how = f"deterministic standalone form ({form.method}): {form.why}"
    if not guard.ok and form.method != "previous_turn":  # the referent form failed: today's form
        fallback = concat_standalone(message, history)
        how = f"{how}; rejected ({guard.reason}), so the previous user turn + message"
        form, guard = Standalone(fallback, "previous_turn", why=how), check_rewrite(message, fallback, said, catalog=catalog)
    unasked = ""
    if form.answer and asks_unanswered(message, form.answer):
        # The assistant asked something the message does not take up: the user moved on, and the
        # answer's words would pull the result back to the passage just answered.
        unasked = "; the assistant's last turn asks something the message does not take up, so its words are not searched"
        form = replace(form, answer="")
    chosen = ""
    if guard.ok and (phrase_choice == "always" or (phrase_choice == "answers" and answered_before(history))):
        form, chosen = _chosen(message, history, form, catalog=catalog, embedder=embedder)
        how += chosen
    if guard.ok and form.text == message and form.answer:
        # Nothing to carry into the message, but it replies to an answer: its words beside it.
        answered = f"{message.rstrip()} {form.answer}"
        if check_rewrite(message, answered, said, catalog=catalog).ok:
            return Followed(message, "original", True,
                            step("ran", f"{gate.reason}; nothing in the conversation to carry into it", f"also searching the answer's words beside it ({answered!r})",
                                 {"cues": list(gate.cues), "strength": gate.strength, "method": form.method}),
                            _answered(answered, scale, message))
    if not guard.ok or form.text == message:  # a name the guard reads across the join; search the message as typed
        why = f"rewrite rejected: {guard.reason}" if not guard.ok else f"nothing in the conversation to carry into it{chosen}"
        return Followed(message, "original", True, step("failed", f"{gate.reason}; {why}{unasked}"))
    standalone = form.text
    # The answer the message replies to, searched beside the form (never copied into it).
    answered = f"{standalone.rstrip()} {form.answer}" if form.answer else ""
    if answered and not check_rewrite(message, answered, said, catalog=catalog).ok:
        answered = ""
    details: dict[str, Any] = {"cues": list(gate.cues), "strength": gate.strength, "guard": guard.reason, "method": form.method,
                               "referents": [r.text for r in form.referents]}
    how += unasked
    hedge = ""
    if shift is not None:
        details["chance"] = round(shift[0], 3)
        hedge = f" (chance {shift[0]:.2f} of a new subject)"
    if searched.how in ("instead", "leads") and not sure_referents(form, history, catalog):
        # A referent guessed from the words (a noun phrase, a name, the previous turn), not one the
        # deployment knows: the form may carry the wrong one, so the message as typed is searched
        # beside it at `GUESSED_MESSAGE_WEIGHT` and a wrong referent cannot take the whole result.
        weight = JOINED_MESSAGE_WEIGHT if form.method == "previous_turn" else GUESSED_MESSAGE_WEIGHT
        searched = Searched("leads", max(weight, searched.weight if searched.how == "leads" else 0.0))
        hedge += f"; its referent guessed from the words ({form.method}), so the message as typed weighs {searched.weight:.2f} beside it"
    also = f"; with the answer's words beside it ({answered!r})" if answered else ""
    # Two candidates: every reading the guard passes is searched, fused, and the trace names them;
    # the ambiguity move covers them or asks (`Followed.readings`).
    kept = [PointerReading(r.text, q) for r, q in zip(form.referents, (standalone, *form.readings), strict=False)
            if q == standalone or check_rewrite(message, q, said, catalog=catalog).ok]
    pointed = tuple(kept) if form.readings and len(kept) >= 2 else ()
    readings = tuple(PlanQuery(text=r.query, kind="standalone", weight=1.0) for r in kept[1:])
    if form.readings:
        details["candidates"] = [r.text for r in form.referents]
        also += f"; each reading searched: {', '.join(repr(q.text) for q in readings)}"
    if searched.how == "beside":
        return Followed(message, "original", True,
                        step("ran", f"{gate.reason} (a weak cue); {how}",
                             f"also searching {standalone!r} next to the message at weight {searched.weight:.2f}{hedge}{also}", details),
                        (PlanQuery(text=standalone, kind="standalone", weight=searched.weight), *(q.model_copy(update={"weight": searched.weight}) for q in readings), *_answered(answered, searched.weight * scale, message)),
                        pointed)
    if searched.how == "leads":
        # A pointer, but some chance of a new subject: the form leads, the message as typed is
        # searched beside it, so a wrong referent cannot take the whole result.
        return Followed(standalone, "standalone", True,
                        step("ran", f"{gate.reason}; {how}",
                             f"searched {standalone!r}, and {message!r} beside it at weight {searched.weight:.2f}{hedge}{also}", details),
                        (*readings, PlanQuery(text=message, kind="original", weight=searched.weight), *_answered(answered, scale, message)), pointed)
    return Followed(standalone, "standalone", True,
                    step("ran", f"{gate.reason}; {how}", f"searched {standalone!r} instead of {message!r}{hedge}{also}", details),
                    (*readings, *_answered(answered, scale, message)), pointed)


def _chosen(message: str, history: Sequence[Turn], form: Standalone, *, catalog: Catalog | None,
            embedder: Embedder) -> tuple[Standalone, str]:
    """The searched text with the words the learnt choice keeps (`choice.py`, `words.py`) and what the
    trace adds (the likeliest words and their chances); the rules' form and nothing when the guard rejects it."""
    text, chances = phrase_model().choose(message, history, form, embedder=embedder, catalog=catalog)
    shown = ", ".join(f"{c!r} {p:.2f}" for c, p in chances[:6])
    if text == message:
        # The answer's words were weighed one by one and none kept: not searched beside the message either.
        return replace(form, text=message, answer=""), f"; the learnt model kept none of the conversation's words ({shown})"
    if text == form.text or not check_rewrite(message, text, texts(history), catalog=catalog).ok:
        return form, ""
    return replace(form, text=text), f"; words chosen by the learnt model ({shown})"


def sure_referents(form: Standalone, history: Sequence[Turn], catalog: Catalog | None) -> bool:
    """Whether what the form carried in is known to the deployment, the evidence on which a form
    may replace the message: every referent a catalog product, an identifier or a model name, or,
    for the previous turn put in front of the message, a previous user turn that names one."""
    if form.method == "previous_turn":
        said = [t.text for t in history if t.role == "user"]
        return bool(said) and any(_known(r) for r in Tracker(catalog).mentions(said[-1]))
    return bool(form.referents) and all(_known(r) for r in form.referents)


def _known(r: Referent) -> bool:
    """A catalog product, an identifier, or a model name: a name with a letters-and-digits code in
    it ("Aero X2", "Solace 7 Pro"), which names one thing whatever the deployment."""
    return r.kind in ("entity", "identifier") or (r.kind == "name" and bool(_MODEL_CODE.search(r.text)))


def _answered(text: str, weight: float, message: str) -> tuple[PlanQuery, ...]:
    """The answer query, left out by execute when `message` drifts away from what it finds."""
    guard = DriftGuard(against=message, clarity=DRIFT_CLARITY, away=DRIFT_AWAY)
    return (PlanQuery(text=text, kind="standalone", weight=weight, unless_drift=guard),) if text else ()


def shift_chance(message: str, history: Sequence[Turn], gate: FollowUp, *, catalog: Catalog | None, embedder: Embedder, window: int) -> tuple[float, float] | None:
    """(chance, similarity) of the topic-shift check (`shift.py`) for a flagged message: the
    chance it opens a new subject, and its greatest cosine to what `compared_texts` gives (the
    last `window` turns, and the last answer sentence by sentence). None when there is nothing to
    compare with."""
    recent = compared_texts(history, window)
    if not recent:
        return None
    vectors = np.asarray(embedder.embed([message, *recent]), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    similarity = float((vectors[1:] @ vectors[0]).max())
    features = shift_features(flag_kind(gate), gate.cues, similarity=similarity, names_own=names_its_subject(message, catalog=catalog), message=message)
    return shift_model().chance(features), similarity
