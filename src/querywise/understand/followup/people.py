"""People in an assistant's answer, as a personal pronoun of the next message may take them: their
full names, and the gender the answer's own pronouns give each.

Only text is read here (no tracker): the tracker marks the gender of the user's referents with it
(`Tracker.read` of an answer), and `answer_refs` chooses among the answer's people with it.

- **A person's name** is written as people's are: two or three capitalised words, an initial
  between them ("Joseph S. Cook"), not after an article or "of" ("the Battle of Hastings"), not
  after a place's preposition or a place it is the region of ("in Bethel, New York"), no word of
  a thing's name ("Nobel Prize", "Florence Cathedral", "Medici family"), no work's title (a year
  after it, "Double Indemnity (1944)", or the passive of its making, "... was directed by"): a
  personal pronoun never takes a place, a band, an event or a film.
- **Its gender** is the first "he"/"she" (else "him"/"his"/"her") after its mention and before
  the next person's ("Pierre Curie ... In 1895 he married Marie Sklodowska, ... famous for her
  work": Pierre "he", Marie "she"); no such pronoun, no gender (`""`), and the name stays a
  candidate for either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from querywise.text import analyze
from querywise.understand.followup.message import FEMALE_NOUNS, FUNCTION, MALE_NOUNS, PREP

__all__ = ["CAP", "FULL_NAME", "NOT_PERSON", "PLACE_NAME", "Gender", "Person", "answer_pair", "answer_people", "head_noun", "noun_gender", "pronoun_gender"]

Gender = Literal["m", "f", ""]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# A capitalised word of a name in Latin letters, accents included ("Antoni Gaudí", "Björn Borg",
# "Antonín Dvořák"): an ASCII-only class cut a name at its first accented letter, and the person was lost.
# Latin Extended-A (U+0100-U+017F) alternates cases, so it is allowed on both sides.
CAP = "[A-Z\u00c0-\u00d6\u00d8-\u00de\u0100-\u017f][a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u017f]+"
_INITIAL = "[A-Z\u00c0-\u00d6\u00d8-\u00de]"
# A full name as people's are written: two or three capitalised words, an initial between them,
# or initials and a surname ("J. D. Bernal").
FULL_NAME = re.compile(rf"(?<![\w.])(?P<name>{CAP}(?:\s+{_INITIAL}\.)?(?:\s+{CAP}){{1,2}}|(?:{_INITIAL}\.\s?){{1,3}}{CAP})\b")
#: A name where something happens or goes: "in Dubai", "to Iceland", "from New Zealand" (its
#: `name`, after its `prep`); the place an answer names (`answer_refs`), where a situation's story
#: happens (`situation`) and, but for "to", the places the word choice reads (`word_traits.Places`).
PLACE_NAME = re.compile(rf"\b(?P<prep>in|at|near|from|to)\s+(?P<name>{CAP}(?:\s+{CAP}){{0,2}})\b")
#: Words that end or make a name of a thing, a group or an event, not a person ("St Mary's
#: Hospital", "Nobel Prize", "Woodstock Festival", "Medici family").
NOT_PERSON = _words(
    "university college school hospital prize award war empire kingdom union states republic ocean sea river lake mountain "
    "mountains street road company church museum park island islands city county state province bay reef canal bridge "
    "tower building centre center institute society party army navy court house hall station airport festival band "
    "battle cathedral palace castle family dynasty mission album records games cup league club team treaty revolution "
    "stores store engine system day north south east west new san los las st saint "
    # Bodies and instruments an answer names in capitals, never "he" or "she" ("the Consumer Protection Commission").
    "commission council agency authority department ministry office board bureau committee tribunal association "
    "organisation organization corporation foundation trust fund bank service act directive regulation"
)
_MALE = frozenset(["he", "him", "his", "himself"])
_FEMALE = frozenset(["she", "her", "hers", "herself"])
_NOMINATIVE = re.compile(r"\b(?:he|she|himself|herself)\b", re.IGNORECASE)
_GENDERED = re.compile(r"\b(?:he|him|his|himself|she|her|hers|herself)\b", re.IGNORECASE)
# What comes before a place's name, not a person's ("in Bethel", "from Aberdeen").
_PLACE_BEFORE = frozenset(["in", "at", "near", "from", "to", "of", "the", "a", "an", "into", "across", "outside", "around"])
# Two people joined: "Neil Armstrong and Buzz Aldrin", whom a "they" may mean.
_PAIR = re.compile(rf"{FULL_NAME.pattern}(?:,\s+{FULL_NAME.pattern.replace('?P<name>', '?:')})*,?\s+and\s+(?P<last>{CAP}(?:\s+{_INITIAL}\.)?(?:\s+{CAP}){{1,2}})\b")


@dataclass(frozen=True)
class Person:
    """A person an answer names: the name as written, where, and the gender its pronouns give."""

    name: str
    start: int
    gender: Gender = ""

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(analyze(self.name))


def pronoun_gender(pronoun: str) -> Gender:
    """"m" for he/him/his, "f" for she/her, "" for any other word."""
    low = pronoun.lower()
    return "m" if low in _MALE else "f" if low in _FEMALE else ""


def head_noun(phrase: str) -> str:
    """The head of an English noun phrase, lower-cased: its last word before a preposition ("my
    sister in Galway" -> "sister", "the sister of the king" -> "sister", "her older sister" -> "sister")."""
    words = phrase.lower().split()
    cut = next((k for k, w in enumerate(words) if k and w in PREP), len(words))
    return words[cut - 1].removesuffix("'s") if cut else ""


def noun_gender(phrase: str) -> Gender:
    """"f" for a noun phrase whose head marks a woman ("my mom", "my sister in Galway"), "m" for a
    man's ("my brother"), "" for any other: the closed class of English nouns of sex and kinship."""
    head = head_noun(phrase)
    return "f" if head in FEMALE_NOUNS else "m" if head in MALE_NOUNS else ""


# What follows a work's title, never a person's name: its year ("Double Indemnity (1944)") or the
# passive of its making ("Bicycle Thieves was directed by ...", "... were written by ...").
# A person may be the subject of a passive too ("was killed by", "was raised by"): only verbs of making.
_WORK_AFTER = re.compile(
    r"\s*\(\d{4}\)|\s+(?:was|were)\s+(?:\w+ly\s+)?(?:directed|written|painted|built|designed|composed|produced|created|"
    r"developed|invented|published|recorded|made|sung|performed|sculpted|founded|established|coined|filmed|co-written|co-directed)\s+by\b"
)


def _is_person(text: str, start: int, words: list[str], end: int | None = None) -> bool:
    if end is not None and _WORK_AFTER.match(text, end):
        return False  # a title: a film, a book, a building made by someone
    if words[0].lower() in FUNCTION:
        return False  # "The English king ...": a capital that opens a sentence, not a first name
    before = text[:start].rstrip()
    prev = before.split()[-1:] or [""]
    if prev[0].lower().strip(",") in _PLACE_BEFORE or any(w.lower().strip(".") in NOT_PERSON for w in words):
        return False
    # "Bethel, New York": a name after a capitalised word and a comma is the place's region.
    return not (before.endswith(",") and prev[0][:1].isupper())


def answer_people(text: str) -> list[Person]:
    """The people `text` names, in order, each with the gender its pronouns give (see the module's
    docstring); a name said twice is one person, at its first mention."""
    found = [(m.start(), m.end(), m.group("name")) for m in FULL_NAME.finditer(text) if _is_person(text, m.start(), m.group("name").split(), m.end())]
    people: dict[tuple[str, ...], Person] = {}
    for n, (start, end, name) in enumerate(found):
        upto = found[n + 1][0] if n + 1 < len(found) else len(text)
        # A subject's "he"/"she" says whom it is about; a "his" or "her" after a name may be
        # another's ("Ingrid Moller, who later ran his gallery herself").
        pronoun = _NOMINATIVE.search(text, end, upto) or _GENDERED.search(text, end, upto)
        person = Person(name, start, pronoun_gender(pronoun.group(0)) if pronoun else "")
        kept = people.get(person.key)
        if kept is None:
            people[person.key] = person
        elif not kept.gender and person.gender:
            people[person.key] = Person(kept.name, kept.start, person.gender)
    return list(people.values())


def answer_pair(text: str) -> str | None:
    """The one run of two or more people joined by "and" that `text` names ("Neil Armstrong and
    Buzz Aldrin"), as written; None for none or two such runs."""
    runs = [m.group(0) for m in _PAIR.finditer(text) if _is_person(text, m.start(), m.group("name").split())
            and not any(w.lower() in NOT_PERSON for w in m.group("last").split())]
    return runs[0] if len(runs) == 1 else None
