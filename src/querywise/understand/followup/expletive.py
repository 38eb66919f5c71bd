"""Expletive "it": an "it" with no referent, which the gate does not count as a pointer and the
standalone form leaves as typed ("is it possible to ...", "it takes ... to", "what does it mean",
"what time is it", "it sounds like ...").

A modal adjective or a verb of saying with a whole clause after it is one too: "is it true (that)
he left the tapes?", "is it likely the record sold?", "it is said she ...": the clause is what is
true or said (#34: "Is it true he left ..." became "Is bare true he left ..."). Its clause opens
with a subject -- a personal pronoun, a determiner, a number or a name -- never with "to" or "for"
(those are the infinitive cases above). Chosen on dialogues_train_9 (QuAC-style conversations).
"""

from __future__ import annotations

from querywise.understand.followup.message import AUX, BE, COUNT_WORDS, DET, IMPERSONAL, MODAL_ADJ, TIME_NOUNS, TOUGH, Message

__all__ = ["expletive_it"]

_SEEMING = frozenset(["sound", "sounds", "sounded", "look", "looks", "looked", "feel", "feels", "felt"])
# Passive verbs of saying and knowing that extrapose a clause: "it is said (that) ...".
_SAYING = frozenset(["said", "reported", "rumoured", "rumored", "believed", "thought", "known", "claimed"])
# Words that open a clause's subject: "is it true *he* left", "*the* manuscript", "*two* of them".
_CLAUSE_SUBJECT = frozenset(["he", "she", "they", "i", "we", "you", "there"]) | frozenset(DET) - frozenset(["that"])


def _clause_subject(m: Message, k: int) -> bool:
    """Whether token `k` can open the subject of a clause: a subject pronoun, a determiner, a
    number or a name."""
    if not 0 <= k < len(m.toks):
        return False
    t = m.toks[k]
    return t.low in _CLAUSE_SUBJECT or t.low.isdigit() or t.low in COUNT_WORDS or t.low == "one" or (t.named and t.text[:1].isupper())


def expletive_it(m: Message, i: int) -> bool:
    """Whether the "it" at token `i` is expletive, with no referent: extraposition next to a
    copula ("is it possible to", "it is true that", "is it true he ..."), "it takes/costs ... to",
    "what does it mean", weather."""
    if any(w in TIME_NOUNS for w in m.low[max(0, i - 3) : i]):
        return True  # "what time is it", "what day is it"
    if m.at(i + 1) in BE and any(w in TIME_NOUNS for w in m.low[i + 2 : i + 5]):
        return True  # "it's my first time", "it is time to"
    after = m.low[i + 1 : i + 8]
    copula = m.at(i - 1) in BE or bool(after[:1] and after[0] in BE)
    skip = 0
    while skip < len(after) and (after[skip] in BE or after[skip] == "not"):
        skip += 1
    after = after[skip:]
    head = after[0] if after else ""
    if copula and len(after) >= 2 and (head in MODAL_ADJ or head in _SAYING) and _clause_subject(m, i + 2 + skip):
        return True  # "is it true he left the tapes?", "it is said the manuscript was lost"
    if copula and len(after) >= 2 and head.isalpha() and head not in AUX and not head.endswith("ed"):
        # "is it possible (for me) to ...", "it is true that ...". A participle ("can it be used
        # to ...") keeps "it" referential, and so does a tough adjective whose infinitive has a
        # gap: "is it easy to pair?" asks about the thing; "is it easy to pair a TV?" does not.
        to = after.index("to") if "to" in after[1:5] else None
        if after[1] in {"that", "whether"} or (head in MODAL_ADJ and after[1] == "for" and after[2:3] and after[2].endswith("ing")):
            return True  # "is it possible for getting two benefits?" (but "is it effective for treating X?" asks of "it")
        if to is not None and after[1] in {"to", "for"}:
            if head not in TOUGH:
                return True
            obj = m.toks[i + 1 + skip + to + 2] if i + 1 + skip + to + 2 < len(m.toks) else None
            return obj is not None and (obj.content or obj.named or obj.low in DET)
    if head in {"take", "takes", "took", "cost", "costs"}:
        return "to" in after
    if head in _SEEMING and after[1:2] and after[1] in {"like", "as"}:
        return True  # "it sounds like a plan", "it looks as if": the speaker's impression, no referent
    return head in IMPERSONAL
