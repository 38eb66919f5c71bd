"""The thing an answer says it is about: the subject of its first sentence, when its second
sentence goes on about it with "It" or "Its" ("Topiramate was first approved to treat epilepsy
... It is thought to work by ..."). A reply's "it" then means that thing -- the answer's salient
referent, not a phrase of the user's turn before (whose own pointer the answer just resolved:
"Tell me more about the second one." -- "Topiramate was ..." -- "What are its side effects?").

Narrow on purpose: an "it" taking any name an answer gave lost on question-answer dialogues
(`tracker`'s docstring); here the answer itself shows its subject carried on, and a subject the
user's own turns already said is left to the tracker. An answer that names its subject's name
("... is often called hooch. It forms ...") gives that name. Whole answer sentences are never
taken: only the opening noun phrase or the name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from querywise.text import analysed_part, analyze
from querywise.understand.followup.message import AUX, Message
from querywise.understand.followup.phrases import is_plural, noun_phrases
from querywise.understand.followup.tracker import ANSWER_CHARS, Referent

__all__ = ["answer_topic", "place_answer_topic"]

_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
# The second sentence carries the first one's subject on.
_CARRIED_ON = re.compile(r"\s*(?:It|Its)\b")
# "X is often called Y", "X, known as Y": the name the answer gives its subject.
_CALLED = re.compile(r"\b(?:is|are|was|were)\s+(?:(?:often|usually|commonly|also|sometimes)\s+)?(?:called|known as|named)\s+"
                     r"(?P<name>[\w'-]+(?:\s+[\w'-]+){0,2}?)(?=\s*[,.;:!?]|\s+(?:which|that|and|in|by|or|because)\b|\s*$)")
# A free "it"/"its" of the message: what the answer's subject is put in place of.
_IT = re.compile(r"\b(?P<p>it|its)\b", re.IGNORECASE)


def answer_topic(answer: str) -> Referent | None:
    """The answer's subject carried on by its second sentence ("It ...", "Its ..."): the noun
    phrase opening its first sentence before the verb, or the name it is "called"; None when the
    answer shows no such subject."""
    sentences = _SENTENCE.findall(analysed_part(answer, ANSWER_CHARS))
    if len(sentences) < 2 or _CARRIED_ON.match(sentences[1]) is None:
        return None
    first = sentences[0].strip()
    called = _CALLED.search(first)
    if called is not None:
        words = called.group("name")
    else:
        m = Message(first, [])
        opening = min(noun_phrases(m), key=lambda p: p.first, default=None)
        if opening is None or opening.first > (1 if m.at(0) in {"the", "a", "an"} else 0):
            return None  # the sentence opens on something else ("For chronic migraine, ...", "Scientists at ...")
        after = m.at(opening.end)
        if after not in AUX and after != "," and not after.endswith("s"):
            return None  # no verb after it: not the sentence's subject
        words = opening.words
    key = tuple(analyze(words))
    if not key or is_plural(words):
        return None
    return Referent(words, "name" if any(w[:1].isupper() for w in words.split()[1:]) else "phrase", key)


def place_answer_topic(message: str, answer: str, asked: set[str], cues: Sequence[str]) -> tuple[str, Referent] | None:
    """The message with its free "it"/"its" (the gate's pronoun cue) replaced by the answer's
    carried-on subject (`answer_topic`), when no user turn said that subject (`asked`: the stems of
    their words; else the tracker already holds it) and the message does not name it; else None."""
    if not any(c in ("pronoun:it", "pronoun:its") for c in cues):
        return None
    topic = answer_topic(answer)
    if topic is None or set(topic.key) <= asked or set(topic.key) & set(analyze(message)):
        return None
    m = Message(message, [])
    starts = {t.start for i, t in enumerate(m.toks) if t.low in ("it", "its") and i >= m.remark_end and not m.antecedent_before(i)}
    said = message
    for hit in reversed(list(_IT.finditer(message))):
        if hit.start() in starts:
            words = topic.text + ("'s" if hit.group("p").lower() == "its" else "")
            said = said[: hit.start()] + words + said[hit.end() :]
    return (said, topic) if said != message else None
