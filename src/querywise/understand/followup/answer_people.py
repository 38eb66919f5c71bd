"""People only the assistant's answer names, as a personal pronoun of the message takes them (#34):

- each "he"/"she" no person the user named can take (none of its gender: "he" after Ada
  Lovelace, whom the answer called "she"; no person at all: the Woodstock festival, a place, a
  band) is the answer's first person of its gender the conversation had not named
  (`people.answer_people`); two pronouns of two genders are two people ("Did she show him the
  draft?"), never one twice;
- the most recent person named takes a "he"/"she": the one the last answer names before one the
  tracker took, unless the last user turn named the earlier one again, or the answer still names
  them or speaks of them with a personal pronoun before the new name (`_older`);
- "they"/"them" is the answer's one run of people named together ("Neil Armstrong and Buzz
  Aldrin") when the tracker gave it one name that is neither plural nor a person (the event
  the conversation is about), nor a group that "they" itself takes: a name plural in form
  ("Talking Heads", "the Beach Boys") or one the answer says with a plural verb ("The Velvet
  Underground were ..."). Chosen on the training files: the band's members in place of the band
  cost 17 matched terms and added 84 wrong ones there, while the event's crew (passages_dev) still
  takes "they".

`answer_refs.answer_referent` tries these before a kind or a term the answer introduced.
"""

from __future__ import annotations

import re
from dataclasses import replace

from querywise.text import analysed_part, analyze
from querywise.understand.followup.message import PERSON_NOUNS
from querywise.understand.followup.people import Gender, Person, answer_pair, answer_people, pronoun_gender
from querywise.understand.followup.phrases import is_plural
from querywise.understand.followup.tracker import ANSWER_CHARS, Referent, Standalone, Tracker

__all__ = ["answer_group", "answer_persons"]

_PERSON_PRONOUN = re.compile(r"\b(?P<p>he|she|him|his|her)\b", re.IGNORECASE)
# "their" is left out: "What was their first product?" is the company's as often as its founders'.
_GROUP_PRONOUN = re.compile(r"\b(?P<p>they|them)\b", re.IGNORECASE)
# An answer's personal pronoun before a new name still speaks of the person asked about.
_NOMINATIVE = re.compile(r"\b(?:he|she|his|him|her)\b", re.IGNORECASE)


# The form of a message with its people put in, what they are, and why.
_People = tuple[str, tuple[Referent, ...], str]


def answer_persons(message: str, answer: str, tracker: Tracker, form: Standalone) -> _People | None:
    """Each "he"/"she" of the message that no person the user named can take (none of its
    gender: "he" after Ada Lovelace; no person at all: the Woodstock festival) as a person the answer named (`people.answer_people`): one the conversation had not named before
    it, of the pronoun's gender (the answer's own pronouns say it), the first such; two pronouns
    of two genders, two people ("Did she show him the draft?")."""
    pronouns = list(_PERSON_PRONOUN.finditer(message))
    if not pronouns:
        return None
    answer = analysed_part(answer, ANSWER_CHARS)
    people = answer_people(answer)
    # A person the form took from before the last user turn, whom the last answer does not name,
    # gives way to one the answer names: the most recent person named takes the pronoun ("what
    # else did he invent?" after "... led by Gunpei Yokoi", not the inventor asked about earlier).
    held = [r for r in form.referents if r.person and not _older(r, people, answer, tracker)]
    taken = {r.gender for r in held}
    open_genders = list(dict.fromkeys(g for p in pronouns if (g := pronoun_gender(p.group("p"))) not in taken))
    if not open_genders:
        return None
    used = {r.key for r in held}
    chosen: dict[Gender, str] = {}
    for gender in open_genders:
        fits = [p for p in people if p.key not in used and (p.gender or _known_gender(p.key, tracker)) in ("", gender)]
        # Someone the answer brought in before someone the user named; a gender the answer gave before none.
        fits.sort(key=lambda p: (p.key in tracker.referents, not (p.gender or _known_gender(p.key, tracker))))
        if fits:
            chosen[gender] = fits[0].name
            used.add(fits[0].key)
    if not chosen:
        return None
    said = message
    for p in reversed(pronouns):
        name = chosen.get(pronoun_gender(p.group("p")))
        if name is None:
            continue
        pronoun = p.group("p").lower()
        possessive = pronoun == "his" or (pronoun == "her" and _owns(message, p.end()))
        said = said[: p.start()] + (f"{name}'s" if possessive else name) + said[p.end() :]
    referents = tuple(replace(_referent(name), person=True, gender=g) for g, name in chosen.items())
    names = " and ".join(repr(n) for n in chosen.values())
    return said, referents, f"the person pronoun is {names}, whom the answer named: no one the user named can be, or the answer's is the more recent"


def _older(held: Referent, people: list[Person], answer: str, tracker: Tracker) -> bool:
    """Whether the answer's person is more recent than `held`, whom the form took: `held` is a
    noun of a person class ("the coach"), or a name no word of which the latest user turn said
    (a subject its form appended is not said); the answer names someone else, and neither `held`'s
    whole name nor a personal pronoun before that someone ("..., when he and Raymond Lambert
    reached ..." still speaks of the climber asked about). The conversation's subject, whose
    gender is known, gives way only to someone whose gender the answer gives."""
    name = set(held.key)
    if not (held.kind == "phrase" and held.text.split()[-1].lower() in PERSON_NOUNS):
        if tracker.latest_named is None or any(name & set(k) for k in tracker.latest_named):
            return False
    if name <= set(analyze(answer)):
        return False
    # A name the answer gives no gender ("Burkina Faso combines ...") may be no person at all.
    subject = tracker.subject()
    sure = bool(held.gender) and subject is not None and subject.key == held.key
    others = [p for p in people if not name & set(p.key) and (p.gender or not sure)]
    if not others:
        return False
    said = [pronoun_gender(w) for w in _NOMINATIVE.findall(answer[: others[0].start])]
    return not any(g == (held.gender or g) for g in said)


def _known_gender(key: tuple[str, ...], tracker: Tracker) -> str:
    kept = tracker.referents.get(key)
    return kept.gender if kept is not None else ""


def answer_group(message: str, answer: str, form: Standalone) -> _People | None:
    """"they"/"them"/"their" as the people the answer named together ("Neil Armstrong and Buzz
    Aldrin"), when `resolve` gave it one thing that is neither plural nor a person (the event
    the conversation is about: "How long did the Apollo 11 mission stay on the Moon?")."""
    pronouns = list(_GROUP_PRONOUN.finditer(message))
    if not pronouns or form.method != "placed" or not form.referents or any(r.plural or r.person or r.kind == "phrase" for r in form.referents):
        return None
    if any(_group(r.text, answer) for r in form.referents):
        return None  # "they" is the band itself, not its members
    pair = answer_pair(analysed_part(answer, ANSWER_CHARS))
    if pair is None:
        return None
    said = message
    for p in reversed(pronouns):
        said = said[: p.start()] + (f"{pair}'s" if p.group("p").lower() == "their" else pair) + said[p.end() :]
    return said, (replace(_referent(pair), plural=True, person=True),), f"{pronouns[0].group('p')!r} is {pair!r}, the people the answer named together"


# A plural verb after a name says the name is a group: "The Velvet Underground were ...".
_PLURAL_VERB = r"\s+(?:are|were|have|had)\b"


def _group(name: str, answer: str) -> bool:
    """Whether `name` is a group that "they" takes itself: its last word is plural in form
    ("Talking Heads", "the Beach Boys"; not "Paris", "Columbus") or the answer says it with a
    plural verb ("The Velvet Underground were an American rock band")."""
    words = name.split()
    last = words[-1] if words else ""
    if last[:1].isupper() and len(words) >= 2 and is_plural(last):
        return True
    bare = re.sub(r"^the\s+", "", name, flags=re.IGNORECASE)
    return re.search(rf"\b{re.escape(bare)}{_PLURAL_VERB}", answer, re.IGNORECASE) is not None


def _referent(text: str) -> Referent:
    """A person's name (or people's, joined by "and") as a referent the tracker keeps."""
    return Referent(text, "name", tuple(analyze(text)) or (text.lower(),))


def _owns(message: str, at: int) -> bool:
    """Whether "her" before this point is a possessive: a content word follows ("her husband")."""
    nxt = re.match(r"\s+([a-z]+)", message[at:])
    return nxt is not None and nxt.group(1) not in {"to", "in", "at", "on", "for", "with", "from", "about", "and", "or", "when", "if"}
