"""The deterministic standalone form of a message the gate flagged, and the conversation's subject.

`standalone_form` reads the conversation turn by turn (`tracker`), resolves each user turn that
leaned on the ones before it (`referent.resolve`, then `answer_refs` for what only an answer
names) and carries the referent into the message; `concat_standalone` is the plain fallback (the
previous user turn, then the message); `conversation_subject` is the subject of the "subject +
message" baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from querywise.catalog import Catalog
from querywise.conversation import Turn, as_turns, user_texts
from querywise.text import ANALYSIS_CHARS
from querywise.understand.followup.answer_refs import answer_referent
from querywise.understand.followup.gate import ASIDE_CUE, FollowUp, answer_words, check_follow_up
from querywise.understand.followup.referent import joined, resolve
from querywise.understand.followup.tracker import ANSWER_CHARS, Referent, Standalone, Tracker

#: The standalone form reads the most recent turns up to this many characters (20 turns of a
#: typical chat fit many times over; a history of long turns is read from its end).
TRACKED_CHARS = 4_000

__all__ = ["TRACKED_CHARS", "Standalone", "concat_standalone", "conversation_subject", "names_its_subject", "standalone_form"]


def concat_standalone(message: str, history: Sequence[str | Turn]) -> str:
    """The previous user turn, a space, then the message: the fallback standalone form.
    A turn without closing punctuation gets a full stop, so that no name seems to run across
    the join ("Yes" + "How can I ..." is not a "Yes How").

    >>> concat_standalone("And the Pro?", ["Warranty on the Solace 7?"])
    'Warranty on the Solace 7? And the Pro?'
    >>> concat_standalone("How can I request?", ["Yes"])
    'Yes. How can I request?'
    """
    said = user_texts(history)
    return joined(said[-1], message) if said else message


def standalone_form(message: str, history: Sequence[str | Turn], gate: FollowUp, *, catalog: Catalog | None = None) -> Standalone:
    """The deterministic standalone form of a message the gate flagged: the conversation's
    referent carried into it (`referent.resolve`).

    The conversation is read turn by turn, each user turn that leaned on the ones before it
    resolved first and tracked as resolved: the subject of "what is throat cancer?" stays in
    focus through "is it treatable?" and "what are the main symptoms?"."""
    turns = _recent(as_turns(history), TRACKED_CHARS)
    tracker = Tracker(catalog)
    previous: str | None = None
    for n, turn in enumerate(turns):
        said = turn.text
        carried: tuple[Referent, ...] = ()
        appended: tuple[Referent, ...] = ()
        if turn.role == "user":
            earlier = check_follow_up(said, turns[:n], catalog=catalog)
            # An aside ("what is bradykinin?", searched as typed) is tracked as the follow-up it is
            # too: the conversation's subject beside it stays in view for the turns after it.
            resolved = resolve(said, tracker, earlier.cues, previous=previous) if earlier.needs_context or ASIDE_CUE in earlier.cues else None
            if resolved is not None:  # a pointer into the answer just before it (`answer_refs`)
                resolved = answer_referent(said, turns[:n], tracker, earlier.cues, resolved, previous=previous) or resolved
            if resolved is not None:
                carried, appended = (resolved.referents, ()) if resolved.method == "placed" else ((), resolved.referents)
            previous = resolved.text if resolved is not None else said
        tracker.read(said, turn.role, carried, appended)
        if turn.role == "user" and resolved is not None and resolved.new_subject:
            tracker.move_subject(resolved.referents[0])  # "What about a food truck?": the talk is about it now
    form = resolve(message, tracker, gate.cues, previous=previous)
    form = tracker.with_section(answer_referent(message, turns, tracker, gate.cues, form, previous=previous) or form, message)
    if turns and turns[-1].role == "assistant" and (answer := answer_words(turns[-1].text)):
        # A reply to the answer just given: its words are the vocabulary of what the user is
        # looking at (doc2dial follow-ups, train split: recall@5 0.54 -> 0.64 with them). They
        # are searched beside the form, not copied into it: a standalone question does not quote
        # the answer it follows ("... attend school? I don't know.").
        return replace(form, answer=answer, why=f"{form.why}; the assistant's last answer searched beside it")
    return form


def conversation_subject(history: Sequence[str | Turn], *, catalog: Catalog | None = None) -> str | None:
    """What the conversation is about, read from its user turns as typed (`Tracker.subject`: a
    name the last two user turns that named anything both named, else the first user turn's
    topic); None when no user turn names anything. The subject of "subject + message", the
    baseline every standalone form must beat.

    >>> conversation_subject(["Tell me about the Ottoman Empire.", "What was the role of slavery?"])
    'the Ottoman Empire'
    """
    tracker = Tracker(catalog)
    for turn in _recent(as_turns(history), TRACKED_CHARS):
        if turn.role == "user":
            tracker.read(turn.text)
    subject = tracker.subject()
    return subject.placed if subject is not None else None


def _recent(turns: tuple[Turn, ...], budget: int) -> tuple[Turn, ...]:
    """The most recent turns whose words (an answer's first `ANSWER_CHARS`) fit in `budget`:
    the tracker resolves each earlier turn, so its work is bounded by this, not by the history."""
    start = len(turns)
    while start > 0:
        cost = min(len(turns[start - 1].text), ANSWER_CHARS if turns[start - 1].role == "assistant" else ANALYSIS_CHARS) + 1
        if cost > budget and start < len(turns):
            break
        budget -= cost
        start -= 1
    return turns[start:]


def names_its_subject(message: str, *, catalog: Catalog | None = None) -> bool:
    """Whether the message names something of its own (an entity, an identifier, a noun phrase):
    what a message that opens a new subject does."""
    return bool(Tracker(catalog).mentions(message))
