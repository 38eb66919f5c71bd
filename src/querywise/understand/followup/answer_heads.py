"""A definite noun phrase whose head only an answer names, inside a longer noun phrase: "Tell me
more about the lagoon." after "... and the Jokulsarlon glacier lagoon." means that lagoon, and a
standalone question names it in full ("the Jokulsarlon glacier lagoon"). The same for a head the
message already modifies ("the rail pass" after "a Japan Rail Pass", "the hardware keys" after
"Hardware security keys, ...") and for "the X one" / "the X thing" / "the X stuff", whose noun is
the answer's compound from X on ("the pork one" after "... pork shoulder ...") or ending on X
("the glue one" after "cyanoacrylate glue"; not on a name: "the Ferber one" is no "Richard
Ferber"), or, when no compound has X, the noun run the answer puts after the message's own words,
adjectives and participles included ("the rusty patched one" -> "the rusty patched bumblebee").

Read from the grammar, not from a list of words. In the message: a definite or demonstrative
determiner ("the", "this", "that", "these", "those"), then up to three content words ending on a
lowercase head (a capitalised modifier is the user's name for it: "the Rochester plant"; an
ordinal before "one" points into a list, `answer_refs`). In the answer: its noun compounds -- a
run of modifiers (nouns, proper names, acronyms, possessives: no function word, number,
adjective or participle; "-ment" is a noun's) ending on a head, after a determiner, a
preposition, a conjunction or "including", or after a modal, "do", "have" or "to" less the verb
that opens the run ("may offer corticosteroid injections"), and before a function word or
punctuation. At a sentence's start, where a run of content words is as often a subject and its
verb ("Controllers spread writes ..."), only for a phrase with a modifier of its own and only
before punctuation or an auxiliary ("Hardware security keys, ...", "Annual contribution limits
are ..."). The phrase is taken from the latest of the last `ANSWERS` answers that uses the head
as a head, and only when:

- no user turn said the head (else the user's own thing is meant, which the tracker holds);
- the compound ends on the head with the message's own modifiers before it in order, and at
  least one more;
- the answer builds one compound on that head (a shorter one inside a longer counts as the same:
  "glacier lagoon" in "Jokulsarlon glacier lagoon"), of the phrase's number; two ("pork belly",
  "pork loin"), or modifiers coordinated before a plural head ("the Fox and Franz Josef
  glaciers"), leave the message alone: which one is meant is not clear;
- the message did not say the head before the phrase ("... disability benefits? Will my wife get
  those benefits?"), and the phrase has no "of" complement of its own ("the population of ...").

The referent is a phrase, not a name, for the tracker: a later "it" still prefers the user's
subject, and the subject the tracker's form gives beside the message stays beside it
(`answer_refs`). Chosen on dialogues_passages.jsonl (its passage rows 0.474 / 0.631 added terms
before, 0.489 / 0.638 reading the latest answer only, 0.511 / 0.660 the last two; three or four
answers back fire 1 and 3 more times on the training files, none right). The fewer or
sentence-opening modifiers, "thing" / "stuff", the compound ending on X, the repeated adjectives,
"including" and the verb after a modal, with the subject kept beside, were chosen on the training
files (dialogues_train*.jsonl, passages_dev and passages beside them), rules alone: rows with
answers 0.427 / 0.531 -> 0.439 / 0.530 (29 rows change, 17 gain a term, none loses one), the
other rows unchanged. CAsT 2019 / 2020 hold no answers: it cannot fire there.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from querywise.text import ANALYSIS_CHARS, analysed_part, analyze
from querywise.understand.followup.message import (
    ADJECTIVE_ENDINGS,
    ARTICLE,
    AUX,
    BE,
    DEICTIC_TIME,
    DET,
    DOMAIN_ADJ,
    EVALUATIVE,
    FUNCTION,
    NOT_REFERENTS,
    PARTICIPLES,
    PREP,
    UNIQUE,
)
from querywise.understand.followup.phrases import is_plural

__all__ = ["ANSWERS", "MAX_MODIFIERS", "Compound", "answer_head", "compounds"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: A head is looked for in up to this many answers back: "What temperature does that reaction
#: need?" may follow an answer about something else after the one that named "the Maillard reaction"
#: (1 or 2 tried on dialogues_passages.jsonl: see the module's docstring).
ANSWERS = 2
#: The most modifiers a compound keeps before its head (the words nearest it): past that, a run of
#: content words is more likely a clause than one name.
MAX_MODIFIERS = 3

# Words, with a possessive kept on its word ("module's", "13's"); numbers and punctuation as their own tokens.
_TOKEN = re.compile(r"[^\W\d_](?:[\w-]*[^\W_])?(?:['\u2019]s\b)?|\d[\d.,]*(?:['\u2019]s\b)?|[^\w\s]")
# What a compound is taken after: a determiner, a preposition or a conjunction ("the", "its", "of",
# "or"), or a number after one ("a 600 TBW rating"); not "to", before a verb as often as a noun,
# nor "that".
_OPENS = (DET | PREP | frozenset(["and", "or", "nor", "including", "include", "includes"])) - frozenset(["to", "that"])
# Number words are a compound's quantity, not its modifier ("three days").
_NUMBERS = _words("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen twenty thirty forty "
                  "fifty hundred thousand million billion dozen dozens hundreds thousands millions billions")
# What a verb follows: a modal, "do", "have" or "to" (not "be", after which a noun phrase stands as often).
_BEFORE_VERB = (AUX - BE) | frozenset(["to"])
# What a sentence starts after (the text's start reads as one).
_SENTENCE_END = frozenset([".", "!", "?", ":", ";"])
# Where the message's definite noun phrase starts.
_DEFINITE = frozenset(["the", "this", "that", "these", "those"])
# Lowercase words that end a run as adjectives without a tagger ("lunar", "thermal", "electric").
_ADJECTIVAL = (*ADJECTIVE_ENDINGS, "al", "ic", "ar", "ary", "ory", "less", "like")
# Adjectives without an adjective's ending, the commonest of them: a closed class, not a noun
# that can modify ("the new tool" is no compound; "the DMV office" is).
_ADJECTIVES = DOMAIN_ADJ | EVALUATIVE | _words(
    "new old big small large little great long short high low young early late whole full real true free open close hard soft "
    "hot cold warm cool wet dry dark light heavy thin thick deep wide fast slow quick rich poor strong weak safe clean fresh "
    "same other different certain similar own only best better worst worse most least more less last next first "
    "red orange yellow green blue purple pink brown black white grey gray")
# Nouns that stand for a noun the speaker does not name, as "one" does ("the nerve stimulation
# thing", "the sequestered stuff"): the compound their modifiers end, or begin.
_THING = frozenset(["thing", "things", "stuff"])
# Words before "one" that point into a list, not modify a noun ("the first one"): `answer_refs`.
_ORDINAL = _words("first second third fourth fifth last final next other same former latter")
# Heads no compound is looked for: what any answer has, or the speaker's own ranking.
_NO_HEADS = NOT_REFERENTS | UNIQUE | DEICTIC_TIME | frozenset(["answer", "question", "article", "passage", "text", "part", "one", "ones"]) | _THING
_ONE = frozenset(["one", "ones"])


class Compound(NamedTuple):
    """A noun compound of an answer: its words as written, and their stems (the last the head's)."""

    text: str
    key: tuple[str, ...]


def _stem(word: str) -> str:
    return "".join(analyze(word.removesuffix("'s").removesuffix("\u2019s"), stopwords=False)) or word.lower()


def _modifier(word: str) -> bool:
    """Whether a word of an answer can modify a noun as part of a compound: a noun, a name, an
    acronym or a possessive; not a function word, a number, an adjective or a participle."""
    low = word.lower()
    if not word[0].isalpha() or low in FUNCTION or low.removesuffix("'s") in FUNCTION or low in _NUMBERS:
        return False
    if word[0].isupper():
        return True  # a name's word, adjective or not ("New Zealand", "Old Faithful")
    if low in _ADJECTIVES:
        return False
    # "-ly" is an adverb's ("usually", "electronically"), but not in "belly", "family", "supply".
    adverb = len(low) > 4 and low.endswith("ly") and (low.endswith(("ally", "ully")) or not low.endswith(("lly", "ily", "ply")))
    # "-ment" is a noun's ("treatment", "payment"), though "-ent" is mostly an adjective's.
    return not ((low.endswith(_ADJECTIVAL) and not low.endswith("ment")) or low in PARTICIPLES or adverb or (len(low) > 4 and low.endswith(("ed", "ing"))))


def _gerund(word: str) -> bool:
    """A noun in "-ing" ("rating", "wiring"): a compound's head after a modifier, never a modifier
    itself ("boiling water" is a participle's)."""
    return word.islower() and len(word) > 4 and word.endswith("ing") and word not in FUNCTION


def compounds(answer: str, *, strict: bool = True, opening: bool = False) -> list[Compound]:
    """The noun compounds of two words or more of `answer`: each maximal run of modifiers (and a
    noun in "-ing" after them) after a determiner, a preposition or a conjunction (or, `opening`,
    at a sentence's start) and before a function word or punctuation, cut to its last
    `MAX_MODIFIERS` + 1 words. Not `strict`: every run of two or more, wherever it stands (what
    could also be meant: "... and pork belly are ...")."""
    toks = _TOKEN.findall(analysed_part(answer, ANALYSIS_CHARS))
    out: list[Compound] = []
    i = 0
    while i < len(toks):
        if not _modifier(toks[i]):
            i += 1
            continue
        j = i + 1
        # A plural noun ends its compound (a modifier is singular: "glacier hikes"); a lowercase
        # word after it is its verb ("glaciers reach", "cells last").
        while j < len(toks) and _modifier(toks[j]) and not (toks[j].islower() and toks[j - 1].islower() and is_plural(toks[j - 1])):
            j += 1
        if j < len(toks) and _gerund(toks[j]):
            j += 1
        n = i - 2 if i > 1 and toks[i - 1][0].isdigit() else i - 1  # "a 600 TBW rating": the number is its quantity
        before = toks[n].lower() if n >= 0 else "."
        after = toks[j].lower() if j < len(toks) else "."
        # After a modal, "do", "have" or "to" a run opens on its verb ("may offer corticosteroid injections").
        verb = before in _BEFORE_VERB and toks[i].islower() and j - i >= 3
        run = toks[max(i + verb, j - MAX_MODIFIERS - 1) : j]
        head = run[-1]
        closes = after in FUNCTION or not after[:1].isalnum()
        # At a sentence's start a run before a word is as often a subject and its verb ("Compound
        # chocolate sets at ..."): only before punctuation, or an auxiliary ("Annual contribution limits are ...").
        opens = before in _OPENS or verb or (opening and before in _SENTENCE_END and (not after[:1].isalnum() or after in AUX))
        # "the Fox and Franz Josef glaciers": modifiers coordinated before a plural head name two things.
        shared = before in ("and", "or") and n > 0 and _modifier(toks[n - 1]) and is_plural(head)
        if (not strict or (opens and closes and not shared)) and len(run) >= 2 and head[0].isalpha() and not head.lower().endswith(("'s", "\u2019s")):
            out.append(Compound(" ".join(run), tuple(_stem(w) for w in run)))
        i = j
    return out


def _heads(answer: str) -> set[str]:
    """The stems of the words `answer` uses as heads: any word but a function word that modifies
    no word after it ("damaged wiring inside", not "Park" of "Park rangers"; a plural modifies none)."""
    toks = _TOKEN.findall(analysed_part(answer, ANALYSIS_CHARS))
    return {_stem(w) for w, nxt in zip(toks, [*toks[1:], "."], strict=True)
            if w[0].isalpha() and w.lower() not in FUNCTION and (not _modifier(nxt) or (w.islower() and nxt.islower() and is_plural(w)))}


# Where the message's definite phrase is (start, end), the words that stand in for it, and why.
Found = tuple[int, int, str, str, str]


def answer_head(message: str, answers: Sequence[str], asked: set[str]) -> Found | None:
    """(start, end, phrase, compound, why): the message's definite noun phrase whose head only an
    answer names, with that answer's one compound on it (see the module's docstring); None when
    there is none, a user turn said the head (`asked`: the stems of their words), or two compounds
    could be meant. `answers`: the assistant's turns, the latest last."""
    toks = list(re.finditer(r"[\w'\u2019-]+|[^\w\s]", message))
    for n, tok in enumerate(toks):
        if tok.group(0).lower() not in _DEFINITE:
            continue
        run: list[re.Match[str]] = []
        for t in toks[n + 1 : n + 4]:
            w = t.group(0)
            # A capitalised modifier is the user's name for it ("the Rochester plant"); the head is lowercase.
            if not w[0].isalpha() or (w.lower() in FUNCTION and w.lower() not in _ONE) or (not w.islower() and not w[0].isupper()):
                break
            run.append(t)
        # A head the message said before the phrase has its antecedent there ("... disability
        # benefits? Will my wife get those benefits?").
        before = asked | set(analyze(message[: tok.start()]))
        for size in range(len(run), 0, -1):  # the longest phrase first: "the rail pass", then "the rail"
            if not run[size - 1].group(0).islower():
                continue  # a name's word is no head: the tracker holds the user's names
            if n + size + 1 < len(toks) and toks[n + size + 1].group(0).lower() == "of":
                continue  # "the population of the city": its complement anchors it
            found = _resolved(run[:size], answers, before)
            if found is not None:
                compound, why = found
                start, end = tok.start(), run[size - 1].end()
                # A possessive is the compound's determiner ("New Zealand's South Island"); else "the".
                article = "" if re.search(r"['\u2019]s\b", compound) else "the "
                return start, end, f"{article}{compound}", compound, why
    return None


def _resolved(words: Sequence[re.Match[str]], answers: Sequence[str], asked: set[str]) -> tuple[str, str] | None:
    """The compound the message's phrase `words` (its head last) stands for, and why; None for none."""
    said = [w.group(0).lower() for w in words]
    head = said[-1]
    # "the X one" / "the X thing": a noun the speaker leaves unnamed, found by its modifiers X.
    stand_in = "one" if head in _ONE else "thing" if head in _THING else ""
    if (stand_in and (len(said) < 2 or said[-2] in _ORDINAL)) or (not stand_in and (head in _NO_HEADS or _stem(head) in asked)):
        return None  # "the one" has no modifier to find its noun by; a head the user said is the user's
    own = tuple(_stem(w) for w in (said[:-1] if stand_in else said))
    for answer in list(answers)[-ANSWERS:][::-1]:
        if not stand_in and _stem(head) not in _heads(answer):
            continue  # this answer does not use the head: an earlier one may
        plural = head == "ones" if stand_in == "one" else is_plural(head) if not stand_in else None
        # A phrase with a modifier of its own may mean a compound that opens a sentence ("Hardware security keys, ...").
        taken, could = (_fitting(compounds(answer, strict=strict, opening=len(said) >= 2), own, stand_in, plural) for strict in (True, False))
        if not taken and stand_in and not could:
            taken = could = _continued(answer, said[:-1], plural)
        if len(taken) != 1 or set(could) - set(taken):
            return None  # none, or two that could each be meant: which one is not clear
        # The first word as the message typed it, not as a sentence's start ("Hardware security keys, ...").
        first, *rest = next(iter(taken.values())).split()
        typed = {w.group(0).lower(): w.group(0) for w in words}
        text = " ".join([typed.get(first.lower(), first), *rest])
        return text, f"{' '.join(said)!r} is {text!r}, the one compound on it the answer names"
    return None


def _fitting(found: Sequence[Compound], own: tuple[str, ...], stand_in: str, plural: bool | None) -> dict[tuple[str, ...], str]:
    """The compounds of `found` that the message's phrase can mean, by their stems, the longest of
    those that end alike: the ones ending on its head with its modifiers before it in order and one
    modifier more or more ("hardware security keys" for "the hardware keys"); "the X one" the
    compound from X on ("pork shoulder" for "the pork one"); "the X thing" either; of the phrase's
    number ("the centers" is not "the DMV Call Center"; "thing" and "stuff" say none)."""
    fits: dict[tuple[str, ...], str] = {}
    for c in found:
        words = c.text.split()
        if plural is not None and is_plural(words[-1]) != plural:
            continue
        if stand_in:
            at = next((i for i in range(len(c.key) - len(own)) if c.key[i : i + len(own)] == own), None)
            if at is not None:
                fits[c.key[at:]] = " ".join(words[at:])
        # "the glue one" may be the compound on "glue" ("cyanoacrylate glue"), not on a name ("the
        # Ferber one" is no "Richard Ferber").
        if (stand_in != "one" or words[-1].islower()) and len(c.key) > len(own) and c.key[-1] == own[-1] and _in_order(own[:-1], c.key[:-1]):
            fits[c.key] = c.text
    # A compound inside a longer one is the same thing ("glacier lagoon", "Jokulsarlon glacier lagoon").
    return {key: text for key, text in fits.items() if not any(o != key and o[-len(key) :] == key for o in fits)}


def _in_order(some: tuple[str, ...], every: tuple[str, ...]) -> bool:
    """Whether `some` are words of `every` in the same order (not necessarily next to each other)."""
    rest = iter(every)
    return all(w in rest for w in some)


def _continued(answer: str, modifiers: Sequence[str], plural: bool | None) -> dict[tuple[str, ...], str]:
    """"the rusty patched one" as the answer's words the message repeats and the noun run after
    them ("the rusty patched bumblebee"): the message's own modifiers may be adjectives and
    participles, which no compound keeps. The run ends before a function word or punctuation."""
    toks = _TOKEN.findall(analysed_part(answer, ANALYSIS_CHARS))
    low = [t.lower() for t in toks]
    found: dict[tuple[str, ...], str] = {}
    for i in range(len(toks) - len(modifiers)):
        if low[i : i + len(modifiers)] != list(modifiers):
            continue
        j = k = i + len(modifiers)
        while k < len(toks) and k - j < MAX_MODIFIERS and _modifier(toks[k]) and not (k > j and is_plural(toks[k - 1])):
            k += 1
        verb = k - j > 1 and k < len(toks) and low[k] in ARTICLE
        k -= verb  # a noun run before an article ends on its verb: "bumblebee *became* the first"
        after = low[k] if k < len(toks) else "."
        if k > j and (verb or after in FUNCTION or not after[:1].isalnum()) and (plural is None or is_plural(toks[k - 1]) == plural):
            found[tuple(_stem(w) for w in toks[i:k])] = " ".join(toks[i:k])
    return found
