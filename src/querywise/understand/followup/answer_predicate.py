"""A pronoun whose predicate only fits what the last answer introduced (#34): selectional evidence.

A pronoun's slot in the message -- the subject of its verb ("Could *it* erupt again?"), the object
of a verb or a preposition ("for seeing *them*", "free of *it*") -- is filled, in the answer just
given, by whatever the answer said in that same slot of that same word: "... and the chance of
seeing the northern lights" fills "seeing them". That is a general cue (a verb selects its
arguments; the answer shows which argument it took), not a list of patterns, and it is read
narrowly, because most pointers still mean the user's subject:

- the answer fills the slot with exactly one noun phrase (one or more times), of the pronoun's
  number ("it" a singular, "they"/"them" a plural), that the message does not already say; a
  bare singular word, with no determiner and no capital, is no phrase: it is an adverb or a
  quantifier as often as a noun ("prove otherwise", "keep enough"; on the training files' passage
  rows, rules alone, added terms 0.414 / 0.523 -> 0.416 / 0.525, no row worse);
- what the tracker gave the pronoun (the user's subject) never fills the predicate: no earlier
  turn says it in one sentence with the slot's word ("Old Faithful ... its eruptions" keeps "it
  erupt" on Old Faithful). A pronoun the tracker left as typed takes the phrase on the same
  evidence.

`answer_refs.answer_referent` tries this after the people an answer names and before the kinds and
terms it introduced. The conversation's subject is not added after the phrase, as after no name an
answer gave: the development passages (`dialogues_passages.jsonl`, the one row it changes) give
added terms 0.480 / 0.664 without it, 0.483 / 0.661 with it (0.478 / 0.659 before), and precision
is the bar with no slack. On doc2dial's validation turns (no rewrites to score) it changes 3 of the
1,972 the gate flags after an answer, each read right: "Has your registration expired?" -- "Yes,
it has expired." Light verbs, an impersonal "it" ("what does it mean") and an extraposed one ("is
it dangerous to ...") read no slot.
"""

from __future__ import annotations

from collections.abc import Sequence

from querywise.conversation import Turn
from querywise.text import SENTENCE_SPAN, analysed_part, analyze
from querywise.understand.followup.message import AUX, BE, DET, IMPERSONAL, MODAL_ADJ, PREP, TOUGH, Message
from querywise.understand.followup.phrases import is_plural
from querywise.understand.followup.tracker import Referent, Standalone

__all__ = ["PHRASE_WORDS", "answer_predicate"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The most words a slot's noun phrase may have: past it, the run is a clause, not a name.
PHRASE_WORDS = 4

# The pronouns whose slot is read, and their number; possessives ("its", "their") fill no verb's slot.
_NUMBER = {"it": False, "they": True, "them": True}
_SUBJECTS = frozenset(["it", "they"])
# Words between a subject and its verb ("it could *still* erupt") or a verb and its particle.
_ADVERBS = _words("also often still never not n't just only usually always even ever again really already sometimes")
# What an inflection adds to a stem: "see|ing", "tax|ed", "carri|ed", "erupt|s", the stem's last
# consonant doubled before it ("spot|ting").
_INFLECTIONS = frozenset(["", "s", "es", "ed", "d", "ing", "e", "ies", "ied", "ying", "y"])
# Words that end a noun phrase though they are content words: a particle, a closing adverb, a
# subordinating conjunction ("the surface *while* Michael Collins ...").
_ENDS = _words("up out down off away back again instead too then now though anyway yet either while whereas although because since unless until")
# A phrasal verb's particle, between the verb and its object ("pour off the hooch").
_PARTICLES = _words("up out down off away back")
# A relative clause's subject: the phrase before it is what its verb says something of.
_RELATIVES = _words("which that who")
# Light verbs select almost anything ("use it", "make it", "have them"): their slot says nothing of
# what the pronoun is.
_LIGHT = frozenset(analyze("be have do make get take give go come put set use include need want"))


def _stem(word: str) -> str:
    stems = analyze(word)
    return stems[0] if len(stems) == 1 else ""


def _inflects(word: str, stem: str) -> bool:
    """Whether `word` is `stem` inflected ("erupts", "erupted", "erupting"), not a word derived from
    it ("eruption" is a noun: its slots are no verb's)."""
    low = word.lower()
    if not low.startswith(stem):
        return True  # an irregular stem ("making" -> "make"): the stemmer already matched them
    rest = low[len(stem) :]
    return rest in _INFLECTIONS or (rest[:1] == stem[-1:] and rest[1:] in _INFLECTIONS)  # "spot|ting", "stop|ped"


def _slots(m: Message) -> list[tuple[int, str, str, str]]:
    """The message's it/they/them with the word whose slot they fill: (token, side, stem, preposition);
    side "subject" (the verb after it) or "object" (the verb or adjective before it, through a
    preposition; or the passive verb after it)."""
    out = []
    for i, t in enumerate(m.toks):
        if t.low not in _NUMBER or m.antecedent_before(i) or i < m.remark_end:
            continue
        j, prep = i - 1, ""
        if m.at(j) in PREP:
            prep, j = m.at(j), j - 1
        if j >= 0 and m.toks[j].content and (stem := _stem(m.toks[j].text)) and stem not in _LIGHT:
            out.append((i, "object", stem, prep))
            continue
        if t.low in _SUBJECTS:
            k = i + 1
            while k < len(m.toks) and (m.toks[k].low in AUX or m.toks[k].low in _ADVERBS):
                k += 1
            if m.at(k) in IMPERSONAL or m.at(k) in MODAL_ADJ:
                continue  # "what does it mean ...", "is it possible to ...": no referent's predicate
            if t.low == "it" and m.at(k + 1) in ("to", "that") and m.at(k) not in TOUGH:
                continue  # "is it dangerous to do at home?": the "it" of an extraposed clause
            if k < len(m.toks) and m.toks[k].content and (stem := _stem(m.toks[k].text)) and stem not in _LIGHT:
                # "Are they taxed?": a passive's subject is what the verb acts on, its object's slot.
                out.append((i, "object" if _passive(m, k, m.at(i - 1)) else "subject", stem, ""))
    return out


def _passive(m: Message, k: int, before: str = "") -> bool:
    """Whether the verb at token k is a passive participle: "-ed"/"-en" after a form of "be" (the
    nearest word before it that is no adverb, or `before`, a question's inverted "are")."""
    if not m.toks[k].low.endswith(("ed", "en")):
        return False
    j = k - 1
    while j >= 0 and m.toks[j].low in _ADVERBS:
        j -= 1
    return m.at(j) in BE or before in BE


def _phrase(m: Message, first: int, last: int) -> Referent | None:
    """Tokens first..last as a referent: content or name words only, at most `PHRASE_WORDS`."""
    toks = m.toks[first : last + 1]
    if not toks or len(toks) > PHRASE_WORDS or not all(t.word and (t.content or t.named) for t in toks):
        return None
    if toks[-1].low.endswith("ly") or toks[-1].low in _ENDS:
        return None
    if len(toks) == 1 and not toks[0].named and not is_plural(toks[0].low) and m.at(first - 1) not in DET:
        return None  # a bare singular word is an adverb or a quantifier as often as a noun: "prove otherwise", "keep enough"
    words = m.text[toks[0].start : toks[-1].start + len(toks[-1].text)]
    if toks[0].initial and not toks[0].named:
        words = words[:1].lower() + words[1:]  # capitalised by the sentence only: "Pilot whales are ..."
    key = tuple(analyze(words))
    if not key:
        return None
    named = any(t.named for t in toks)
    return Referent(words, "name" if named else "phrase", key, plural=is_plural(words), definite=m.at(first - 1) == "the")


def _after(m: Message, k: int) -> Referent | None:
    """The noun phrase after token k: its determiner skipped, up to the first word that is no noun's."""
    first = k + 1
    if m.at(first) in _PARTICLES:
        first += 1  # "pouring off the hooch": the phrasal verb's particle before its object
    while m.at(first) in DET:
        first += 1
    last = first
    # A plural noun heads its phrase and ends it: "spotting pilot whales offshore" spots whales.
    while (last + 1 < len(m.toks) and m.toks[last + 1].word and (m.toks[last + 1].content or m.toks[last + 1].named)
           and m.toks[last + 1].low not in _ENDS and not (m.toks[last].content and is_plural(m.toks[last].low))):
        last += 1
    return _phrase(m, first, last)


def _before(m: Message, k: int) -> Referent | None:
    """The noun phrase before the verb at token k (auxiliaries and adverbs between skipped): its subject."""
    last = k - 1
    while last >= 0 and (m.toks[last].low in AUX or m.toks[last].low in _ADVERBS):
        last -= 1
    if m.at(last) in _RELATIVES:  # "the supervolcano, which erupted ...": the phrase the relative clause is on
        last -= 2 if m.at(last - 1) == "," else 1
    first = last
    while first - 1 >= 0 and m.toks[first - 1].word and (m.toks[first - 1].content or m.toks[first - 1].named) and m.toks[first - 1].low not in _ENDS:
        first -= 1
    return _phrase(m, first, last) if last >= 0 else None


def _fillers(answer: str, side: str, stem: str, prep: str) -> list[Referent]:
    """The noun phrases the answer puts in the slot: after the word (and its preposition), or
    before the verb."""
    found = []
    for sentence in SENTENCE_SPAN.findall(analysed_part(answer)):
        if stem not in analyze(sentence):
            continue
        m = Message(sentence, [])
        for k, t in enumerate(m.toks):
            if not t.word or _stem(t.text) != stem or not _inflects(t.text, stem):
                continue
            passive = _passive(m, k)
            if side == "subject":
                hit = None if passive else _before(m, k)
            elif prep:
                hit = _after(m, k + 1) if m.at(k + 1) == prep else None
            elif passive:  # "the lights are seen": the passive's subject fills the object's slot
                hit = _before(m, k)
            else:
                hit = _after(m, k) if m.at(k + 1) not in PREP else None
            if hit is not None and stem not in hit.key:
                found.append(hit)
    return found


def _said_with(referent: Referent, stem: str, turns: Sequence[Turn]) -> bool:
    """Whether some earlier turn says `referent` in one sentence with the slot's word: the
    predicate fits the user's subject too."""
    words = set(referent.key)
    for turn in turns:
        for sentence in SENTENCE_SPAN.findall(analysed_part(turn.text)):
            stems = set(analyze(sentence))
            if stem in stems and words <= stems:
                return True
    return False


def answer_predicate(message: str, earlier: Sequence[Turn], form: Standalone) -> tuple[str, tuple[Referent, ...], str] | None:
    """The message with its it/they/them replaced by the one noun phrase the last answer puts in
    the pronoun's slot (see the module's docstring), the referent and why; None without that
    evidence, and the tracker's form stands."""
    if not earlier or earlier[-1].role != "assistant":
        return None
    m = Message(message, [])
    slots = _slots(m)
    if not slots:
        return None
    own = set(analyze(message))
    taken = [r for r in form.referents if not r.person] if form.method == "placed" else []
    for plural in (False, True):
        mine = [s for s in slots if _NUMBER[m.toks[s[0]].low] == plural]
        fills = {r.key: r for s in mine for r in _fillers(earlier[-1].text, *s[1:]) if r.plural == plural and not set(r.key) <= own}
        # A phrase that says the user's subject, or part of it, is no other referent ("Faithful").
        fills = {k: r for k, r in fills.items() if not any(set(k) <= set(t.key) or set(t.key) <= set(k) for t in taken)}
        if len(fills) != 1:
            continue
        (chosen,) = fills.values()
        if any(_said_with(t, s[2], earlier) for t in taken for s in mine):
            return None  # the user's subject fits the predicate too: it keeps the pronoun
        said = message
        for i in sorted({s[0] for s in mine} | {i for i, t in enumerate(m.toks) if _NUMBER.get(t.low) == plural and i >= m.remark_end and not m.antecedent_before(i)}, reverse=True):
            tok, words = m.toks[i], chosen.placed
            words = words[:1].upper() + words[1:] if tok.text[:1].isupper() else words  # "They ..." opens the sentence
            said = said[: tok.start] + words + said[tok.start + len(tok.text) :]
        why = f"{m.toks[mine[0][0]].low!r} is {chosen.text!r}, which the answer says where the message's predicate puts it"
        return said, (chosen,), why
    return None

