"""The standalone form of a follow-up without an LLM: what the conversation is about, carried into
the message.

Salience tracking (an entity grid reduced to one column per referent): every earlier turn, user
or assistant, oldest first, mentions referents --

- catalog entities, longest name first, by their canonical name (an alias or a part number
  names the entity); a partial name that completes the referent in focus ("the Pro" after the
  Solace 7 is the Solace 7 Pro: "Solace 7" + "Pro" is a name the catalog knows);
- identifiers (`[A-Z]{2,}-\\d{3,}` and the like: order, part and ticket numbers);
- noun phrases: runs of content words, less a verb the sentence's shape gives away (after a
  wh-word, a subject pronoun or "to": "what *causes* throat cancer").

A user turn's unresolved pronoun mentions the referent in focus again, so the conversation's
subject survives a chain of "it"s. An answer mentions only what the deployment knows (a product,
an identifier): its other words are searched beside the form, never made referents. Each mention
weighs `DECAY ** turns_back`, a user turn's more than an answer's (`ASSISTANT_WEIGHT`), an entity's or identifier's more than a phrase's
(`PHRASE_WEIGHT`), the first phrase of a turn (its topic) more than the others. A turn with no
content ("thanks!", "ok") mentions nothing.

The message is then resolved to the most salient compatible referent (number agreement: "they"
wants a plural or several entities, "it" a singular; "he" or "she" a person's name; a name over a
common noun, `NAME_BONUS`): a pronoun or demonstrative is replaced where it stands ("does it cover
water damage?" -> "does the Halden Solace 7 Pro cover water damage?"); an elliptical opener with
one noun phrase asks the previous user turn's question, as resolved itself, of the new subject
("And the Pro?" -> "How long is the warranty on the Halden Solace 7 Pro?"); a longer opener keeps
the previous turn in front of it; any other reference (a definite with no anchor, a bare
comparative, topic continuity) gets the referent appended. The conversation's subject
(`Tracker.subject`: a name the last two user turns both named, else the first user turn's topic)
follows a form whose message names nothing of its own and whose referents do not already speak
of it. Two products or names of the latest user turn and a pointer to one of them are two
readings (`Standalone.readings`, each searched), "which one ...?" a comparison naming each: never
one picked silently. When no referent is found the form is the previous user turn + the message
(`concat_standalone`), and `Standalone.method` says so. The guard checks the result like any
rewrite.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from querywise.catalog import Catalog, Entity
from querywise.text import analysed_part, analyze
from querywise.understand.followup.message import (
    ADJECTIVE_ENDINGS,
    AUX,
    BE,
    CHAT,
    DOMAIN_ADJ,
    IRREGULAR_PLURALS,
    NOT_REFERENTS,
    PARTICIPLES,
    PERSONAL,
    PREP,
    REACTIONS,
    Message,
    _Tok,
)

__all__ = ["POINTING_CUES", "Phrase", "Referent", "Standalone", "Tracker", "joined", "noun_phrases", "resolve"]

#: Weight of a mention one turn further back.
DECAY = 0.6
#: An answer mentions many things in passing; the user's words say what they are asking about. Only
#: what the deployment knows (a product, an identifier) is taken from it: its other phrases are bits
#: of sentences ("Construction finished in 1914"; bench/results/rewrite_dialogues.md).
ASSISTANT_WEIGHT = 0.5
_KNOWN_KINDS = ("entity", "identifier")
#: A noun phrase is a weaker referent than a name the catalog or the identifier pattern knows.
PHRASE_WEIGHT = 0.5
#: The first noun phrase of a turn is its topic.
TOPIC_BONUS = 1.5
#: A pronoun weighs up the latest turn's referents by this (its centre fully, the others half) ...
RECENT_BONUS = 1.0
#: ... and down those of the other number by this. Both chosen on CAsT 2019's train topics.
NUMBER_PENALTY = 0.3
#: A pronoun takes a name (a product, a proper name) over a common noun by this much more: a name
#: is what a conversation is about ("How did it govern?" after "the role of slavery" in a talk about
#: the Ottoman Empire). Chosen on CAsT 2020 among 1, 1.5, 2 and 3 (added-term recall / precision
#: 0.306 / 0.389 at 1, 0.333 / 0.411 at 3).
NAME_BONUS = 3.0
#: The longest message read as an opener and one noun phrase ("And the Pro?").
ELLIPSIS_CHARS = 120
#: Answers are long: only their first words are read for referents.
ANSWER_CHARS = 600

_IDENTIFIER = re.compile(r"\b[A-Za-z]{2,}-?\d{3,}\b|\b\d{6,}\b")
_WH = frozenset(["what", "why", "how", "where", "when", "who", "which", "whose"])
_SUBJECT = frozenset(["i", "you", "we", "they", "he", "she", "it"])
_MODALS = frozenset(["can", "could", "will", "would", "shall", "should", "may", "might", "must"])
_PLURAL_PRONOUNS = frozenset(["they", "them", "their", "theirs", "themselves", "these", "those"])
_SINGULAR_PRONOUNS = frozenset(["it", "its", "itself", "this", "that"])
_PERSON_PRONOUNS = frozenset(["he", "him", "his", "himself", "she", "her", "herself"])
_ATTACHING = frozenset(("on", "for", "in", "at", "about", "with", "from"))
_ARTICLES = frozenset(("the", "a", "an"))
# A phrase's complement that says what it is about reads first: "the history *of* toilets",
# "facts *about* bees".
_COMPLEMENT = frozenset(("of", "about"))
_WH_ADVERBS = frozenset(["why", "how", "when", "where"])
_ENDS = frozenset({"?", ".", "!", ""})
_DEMONSTRATIVES = frozenset(["this", "that", "these", "those"])
_OPENER_CUES = ("opener:", "particle:", "short")
#: Cues that point back at something said before (a pronoun, a demonstrative, an elliptical opener
#: or particle, a message too short to stand): the message cannot be searched alone. The others --
#: a description with no anchor, a presupposed set ("any other ..."), a pro-form ("do I need
#: one?") -- also open new subjects, so the message is kept beside its form (doc2dial's train
#: documents: set and pro-form kept cost the follow-up slice 0.004 recall@5, save changes of subject 0.013).
POINTING_CUES = ("pronoun:", "demonstrative:", *_OPENER_CUES)
_PLACED_CUES = ("pronoun:", "demonstrative:", "pro-form:one", "pro-form:ones")
_POSSESSIVE_CUES = frozenset(f"pronoun:{p}" for p in ("its", "their", "his", "her"))

Method = Literal["placed", "appended", "ellipsis", "previous_turn", "none"]


@dataclass
class Referent:
    """Something the conversation has talked about, and how salient it is now."""

    text: str  # the words to carry into a follow-up
    kind: Literal["entity", "identifier", "name", "phrase"]  # name: a phrase with a proper name in it
    key: tuple[str, ...]  # what makes two mentions the same referent (stems, or the entity id)
    plural: bool = False
    score: float = 0.0
    last_turn: int = -1
    last_rank: int = 0  # its place among the mentions of its last turn (0: the turn's centre)
    definite: bool = False  # said with "the" (a phrase keeps it where it is placed)

    @property
    def placed(self) -> str:
        """The words that stand in for a pronoun: a product takes "the"."""
        return f"the {self.text}" if self.kind == "entity" or self.definite else self.text


@dataclass(frozen=True)
class Standalone:
    """The standalone form and how it was made (for the trace)."""

    text: str
    method: Method
    referents: tuple[Referent, ...] = ()  # what it carried in, placed or appended
    why: str = ""
    # The assistant's last answer, less its filler, when the message replies to it: searched
    # beside the form (its words are what the user is looking at), never copied into it.
    answer: str = ""
    # Two or more candidates and nothing to choose between them: the other readings (each
    # searched beside `text`, fused), never one picked silently.
    readings: tuple[str, ...] = ()


@dataclass
class Tracker:
    """Referents of a conversation, most salient first (see the module's docstring)."""

    catalog: Catalog | None = None
    referents: dict[tuple[str, ...], Referent] = field(default_factory=dict)
    turn: int = 0
    topic: tuple[str, ...] | None = None  # the first user turn's topic (its first referent)
    user_turns: list[tuple[tuple[str, ...], ...]] = field(default_factory=list)  # what each user turn named, in order

    def read(self, text: str, role: str = "user", carried: Sequence[Referent] = (), appended: Sequence[Referent] = ()) -> None:
        """Decay every referent by one turn, then add this turn's mentions: `carried` (what its
        pronouns were resolved to: the turn's centre, first), its own, then `appended` (what its
        standalone form added)."""
        for r in self.referents.values():
            r.score *= DECAY
        weight = 1.0 if role == "user" else ASSISTANT_WEIGHT
        said = text if role == "user" else text[:ANSWER_CHARS]
        own = [r for r in self.mentions(said) if role == "user" or r.kind in _KNOWN_KINDS]
        mentions = [*carried, *own, *appended]
        if role == "user" and mentions:
            if self.topic is None:
                self.topic = mentions[0].key
            self.user_turns.append(tuple(dict.fromkeys(r.key for r in mentions)))
        seen: set[tuple[str, ...]] = set()
        for r in mentions:
            if r.key in seen:
                continue
            w = weight * (PHRASE_WEIGHT if r.kind in ("name", "phrase") else 1.0) * (TOPIC_BONUS if not seen else 1.0)
            kept = self.referents.setdefault(r.key, Referent(r.text, r.kind, r.key, r.plural, definite=r.definite))
            kept.score += w
            kept.last_turn, kept.last_rank = self.turn, len(seen)
            seen.add(r.key)
        self.turn += 1

    def latest_names(self) -> list[Referent]:
        """The products and names the latest user turn named, when it named two or more of them
        side by side ("Compare the Aero X2 and the Pulse Buds."), in its order; else none."""
        if not self.user_turns:
            return []
        named = [self.referents[k] for k in self.user_turns[-1] if self.referents[k].kind in ("entity", "name")]
        entities = [r for r in named if r.kind == "entity"]
        picked = entities or [r for r in named if " and " not in f" {r.text} " and " on " not in f" {r.text} "]
        return picked if len(picked) >= 2 else []

    def subject(self) -> Referent | None:
        """What the conversation is about: a name the last two user turns that named anything
        both named (its current subject), else the first user turn's topic."""
        if len(self.user_turns) >= 2:
            kept = [k for k in self.user_turns[-1] if k in self.user_turns[-2] and self.referents[k].kind != "phrase"]
            if kept:
                return self.referents[kept[0]]
        return self.referents.get(self.topic) if self.topic is not None else None

    def by_salience(self) -> list[Referent]:
        """Every referent, the conversation's focus (most mentioned, recently) first."""
        return sorted((r for r in self.referents.values() if r.score > 0), key=lambda r: (-r.score, -r.last_turn))

    def by_recency(self) -> list[Referent]:
        """Every referent, the latest turn's centre first (Centering: a pronoun takes the highest
        ranked referent of the turn before)."""
        return sorted((r for r in self.referents.values() if r.score > 0), key=lambda r: (-r.last_turn, r.last_rank, -r.score))

    def mentions(self, text: str) -> list[Referent]:
        """The referents `text` names, in reading order (a noun phrase's "of" complement first).
        Only the first `text.ANALYSIS_CHARS` are read, as by every move: bounded work at any length."""
        text = analysed_part(text)
        found: list[tuple[float, Referent]] = []
        taken: list[tuple[int, int]] = []
        if self.catalog is not None:
            for m in self.catalog.mentions(text):
                if len(m.entities) == 1:
                    found.append((m.start, _entity(m.entities[0])))
                    taken.append((m.start, m.end))
            for start, end, entity in self._completions(text, taken):
                found.append((start, _entity(entity)))
                taken.append((start, end))
        for hit in _IDENTIFIER.finditer(text):
            if not any(a <= hit.start() < b for a, b in taken):
                ident = hit.group(0).upper()
                found.append((hit.start(), Referent(ident, "identifier", ("id", ident))))
                taken.append((hit.start(), hit.end()))
        msg = Message(text, taken, catalog=self.catalog is not None)
        for p in noun_phrases(msg, taken):
            key = tuple(analyze(p.words))
            if key:
                found.append((p.at, Referent(p.words, "name" if p.named else "phrase", key, plural=_plural(p.head), definite=p.definite)))
        # Names (catalog, identifiers, phrases with a proper name) rank before common nouns: "the
        # warranty on the Vela X3" is about the Vela X3.
        return [r for _, r in sorted(found, key=lambda x: (x[1].kind == "phrase", x[0]))]

    def _completions(self, text: str, taken: list[tuple[int, int]]) -> list[tuple[int, int, Entity]]:
        """A partial name that, after a surface form of an entity in focus, names another entity:
        "the Pro" after the Solace 7 (the catalog knows "Solace 7 Pro")."""
        assert self.catalog is not None
        focus = [r for r in self.referents.values() if r.kind == "entity" and r.score > 0]
        if not focus:
            return []
        focus.sort(key=lambda r: -r.score)
        out: list[tuple[int, int, Entity]] = []
        for m in re.finditer(r"\b(?:the|a|an)\s+((?:[A-Z0-9][\w-]*)(?:\s+[A-Z0-9][\w-]*){0,2})", text):
            start, end = m.start(1), m.end(1)
            if any(a < end and start < b for a, b in taken):
                continue
            for r in focus[:3]:
                entity = self.catalog.get(r.key[1])
                hit = next((e for form in entity.surface_forms if (e := self._whole_name(f"{form} {m.group(1)}")) is not None), None) if entity else None
                if hit is not None and hit.id != r.key[1]:
                    out.append((start, end, hit))
                    break
        return out

    def _whole_name(self, text: str) -> Entity | None:
        assert self.catalog is not None
        found = self.catalog.mentions(text)
        if len(found) == 1 and found[0].start == 0 and found[0].end == len(text) and len(found[0].entities) == 1:
            return found[0].entities[0]
        return None


def _entity(e: Entity) -> Referent:
    return Referent(e.name, "entity", ("entity", e.id))


def _plural(words: str) -> bool:
    last = words.split()[-1].lower()
    return " and " in f" {words.lower()} " or last in IRREGULAR_PLURALS or (last.endswith("s") and not last.endswith(("ss", "us", "is")))


class Phrase(NamedTuple):
    """A noun phrase of a turn, as `noun_phrases` reads it."""

    at: float  # where it reads: its start offset (an "of" complement reads just before its head)
    words: str
    named: bool  # a proper name is in it
    head: str  # the words its number is read from
    definite: bool  # "the" before it
    first: int  # its first token
    end: int  # the token after it


def noun_phrases(m: Message, taken: Sequence[tuple[int, int]] = ()) -> list[Phrase]:
    """Runs of content words that read as noun phrases, in reading order; the "of" complement of
    a phrase reads just before it ("the history of *toilets*" is about toilets), a pair joined by
    "and" is a phrase of its own, and so is a common noun tied to a name ("the warranty on the
    Vela X3").

    Without a tagger the verb is read off the sentence's shape: the word after a wh-word ("what
    *causes* X"), after a subject pronoun ("I *need* X", "does it *cover* X"), after "to", or
    the last word of a do- or yes/no question ("how does X *work*?", "is X *treatable*?") is
    left out, and so are irregular participles and a trailing "-ed"."""
    out: list[Phrase] = []
    toks = m.toks

    def free(k: int) -> bool:
        return not any(a <= toks[k].start < b for a, b in taken)

    i = 0
    while i < len(toks):
        if not (_nominal(toks[i]) and free(i)):
            i += 1
            continue
        j = i
        while j < len(toks) and free(j) and (_nominal(toks[j]) or (toks[j].low == "'s" and j + 1 < len(toks) and _nominal(toks[j + 1]))):
            j += 1  # a possessive inside the phrase: "Darwin's theory"
        run = _trimmed(m, i, j)
        if run:
            words = m.text[toks[run[0]].start : toks[run[-1]].start + len(toks[run[-1]].text)]
            if len(words) > 3:
                gap = 2 if m.at(i - 1) in _ARTICLES else 1
                of_complement = bool(out) and m.at(i - gap) in _COMPLEMENT and out[-1].end == i - gap
                at = out[-1].at - 0.5 if of_complement else float(toks[run[0]].start)
                owner = next((k for k in run if toks[k].low == "'s"), None)
                if owner is not None and owner > run[0] and any(toks[k].named for k in run if k < owner):
                    # "Melania Trump's religion" is about Melania Trump first.
                    whose = m.text[toks[run[0]].start : toks[owner - 1].start + len(toks[owner - 1].text)]
                    out.append(Phrase(at - 0.5, whose, True, whose, False, run[0], owner))
                out.append(Phrase(at, words, any(toks[k].named for k in run), words, m.at(i - 1) == "the", i, j))
        i = j
    found = list(out)
    for a, b in itertools.pairwise(out):
        gap = b.first - a.end
        if not (gap == 1 or (gap == 2 and m.at(a.end + 1) in _ARTICLES)):
            continue
        if m.at(a.end) == "and":
            pair = f"{a.words} and {b.words}"
            found.append(Phrase(a.at - 0.25, pair, a.named or b.named, pair, a.definite, a.first, b.end))
        elif m.at(a.end) in _ATTACHING and b.named and not a.named:
            tied = m.text[toks[a.first].start : toks[b.end - 1].start + len(toks[b.end - 1].text)]
            found.append(Phrase(a.at - 0.1, tied, True, a.head, a.definite, a.first, b.end))
    return sorted(found)


def _trimmed(m: Message, i: int, j: int) -> list[int]:
    """The tokens of the run [i, j) that belong to a noun phrase (see `noun_phrases`)."""
    toks = m.toks
    run = list(range(i, j))
    prev = m.at(i - 1)
    while run and (toks[run[0]].low in PARTICIPLES or toks[run[0]].low in REACTIONS) and not _capital(toks[run[0]]):
        run = run[1:]  # "what is taught in sociology", "Oh almonds?" (not "the Great Barrier Reef")
    while len(run) > 1 and toks[run[-1]].low in PARTICIPLES:
        run = run[:-1]
    if len(run) == 1 and toks[run[0]].low.endswith("ing") and prev in PREP:
        return []  # a gerund: "best for cooking"
    if len(run) == 1 and prev in BE and m.at(j) in PREP and toks[i].low.endswith(ADJECTIVE_ENDINGS):
        return []  # a predicate adjective: "members are *eligible* for benefits"
    # A clause has one verb: once the run's edge gave it away, its last word is the phrase's head
    # ("does it cover *water damage*?", "can I return *opened earbuds*?"), not a predicate.
    verb_found = True
    if len(run) > 1 and toks[run[-1]].low.endswith("ed") and not _capital(toks[run[-1]]):
        run = run[:-1]  # "what empires survived", "are sharks endangered"
    elif ((prev in _WH or prev in _SUBJECT) and not _capital(toks[i])) or (prev == "to" and not toks[i].named) or (prev in _MODALS and m.at(i - 2) in _SUBJECT):
        run = run[1:]  # "what causes X", "I need X", "how to renew X" (not "to Norway"), "you must deliver X": the first word is a verb
    else:
        verb_found = False
    do_question = any(m.at(k) in {"do", "does", "did"} for k in range(max(0, i - 3), i))
    yes_no = m.at(0) in AUX and i <= 2  # "is [the] X treatable?": the last word is the predicate
    adverbial = m.at(0) in _WH_ADVERBS and m.at(1) in AUX  # "why was the system chosen?"
    if not verb_found and len(run) > 1 and not _capital(toks[run[-1]]) and (m.at(j) in _ENDS or (do_question and m.at(j) in PREP)) and (do_question or yes_no or adverbial):
        run = run[:-1]  # "how does X *work*?", "when did social security *start* in the US?"
    run = [k for k in run if not toks[k].low.endswith("ly") or _capital(toks[k])]  # not "Italy"
    if all(toks[k].low in NOT_REFERENTS or toks[k].low.endswith("est") for k in run):
        return []  # "the first", "types", "the main": no referent without their noun
    if all(toks[k].low in CHAT for k in run):
        return []
    return run


def _capital(t: _Tok) -> bool:
    """A capital that sentence spelling does not explain: a name's word, never a verb ("was it *Brian* Epstein")."""
    return t.named and t.text[0].isupper()


def _nominal(t: _Tok) -> bool:
    return (t.content or t.named) and t.low[0].isalnum()


def _possessive(words: str) -> str:
    return words + ("'" if words.endswith("s") else "'s")


def _pronoun_slots(m: Message) -> list[tuple[int, int, bool | None, bool, bool]]:
    """The message's unresolved pronouns and demonstratives: (start, end, plural, possessive, person),
    each a place a referent goes. "that model" (a determiner with its noun) is no slot."""
    slots = []
    for i, t in enumerate(m.toks):
        w, nxt = t.low, m.at(i + 1)
        if (w not in PERSONAL and w not in _DEMONSTRATIVES) or m.antecedent_before(i):
            continue
        if w.endswith(("self", "selves")) or w in {"theirs", "hers"}:
            continue
        end = t.start + len(t.text)
        if w in _DEMONSTRATIVES:
            if nxt in {"one", "ones"}:
                end = m.toks[i + 1].start + len(m.toks[i + 1].text)
            elif i + 1 < len(m.toks) and m.toks[i + 1].content:
                continue
        plural = True if w in _PLURAL_PRONOUNS else False if w in _SINGULAR_PRONOUNS else None
        possessive = w in {"its", "their"} or (w in {"his", "her"} and i + 1 < len(m.toks) and m.toks[i + 1].content)
        slots.append((t.start, end, plural, possessive, w in _PERSON_PRONOUNS))
    return slots


def _choose(candidates: Sequence[Referent], plural: bool | None, latest: int) -> Referent:
    """The referent a pronoun takes: the most salient, with the latest turn's referents weighed
    up (`RECENT_BONUS`; its centre most) and those of the wrong number down (`NUMBER_PENALTY`:
    number is a weak cue, "turkeys ... want *it* to be the symbol")."""

    def weight(r: Referent) -> float:
        w = r.score
        if r.last_turn == latest:
            w *= 1 + RECENT_BONUS * (1.0 if r.last_rank == 0 else 0.5)
        if plural is not None and r.plural != plural:
            w *= NUMBER_PENALTY
        if r.kind != "phrase":
            w *= NAME_BONUS
        return w

    return max(candidates, key=lambda r: (round(weight(r), 9), plural is None or r.plural == plural))  # a tie goes to the agreeing one


def resolve(
    message: str,
    tracker: Tracker,
    cues: Sequence[str],
    *,
    previous: str | None = None,
) -> Standalone:
    """The standalone form of `message` given the conversation's `tracker` (which has read the
    earlier turns) and the gate's `cues`. `previous` is the previous user turn as resolved (an
    elliptical opener keeps its frame)."""
    catalog = tracker.catalog
    anchors = [(x.start, x.end) for x in catalog.mentions(message)] if catalog is not None else []
    m = Message(message, anchors, catalog=catalog is not None)
    if any(c.startswith(_OPENER_CUES) for c in cues) and previous:
        swapped = _ellipsis(message, previous, tracker)
        if swapped is not None:
            return swapped
        if not any(c in _POSSESSIVE_CUES for c in cues):
            return Standalone(joined(previous, message), "previous_turn", why="an elliptical follow-up keeps the previous question's frame")
        # "And how long does its battery last?": a question of its own after the opener, whose
        # owner is resolved in place (joining the turns would search the warranty question too).
        # A plain "it" keeps the join: "and how fast is it?" after "Which cradle charges the Tide
        # 4 Pro?" asks about the cradle, which the turn joined still says.
    mentioned = tracker.mentions(message)
    own = {r.key for r in mentioned}
    named = any(r.kind != "phrase" for r in mentioned)
    slots = _pronoun_slots(m) if any(c.startswith(_PLACED_CUES) for c in cues) else []
    # A year or a count ("in 1968") is when or how many, never what a pronoun stands for.
    recent = [r for r in tracker.by_recency() if r.key not in own and any(c.isalpha() for c in r.text)]
    candidates = [] if named else [r for r in tracker.latest_names() if r.key not in own]
    if len(candidates) >= 2:
        both = " and ".join(repr(r.text) for r in candidates)
        if _WHICH.match(message):
            text = f"{message.rstrip()} {' or '.join(r.placed for r in candidates)}"
            return Standalone(text, "appended", tuple(candidates), f"'which' between {both}: a comparison naming each")
        single = [slot for slot in slots if slot[2] is not True and not slot[4]]
        if single and len(single) == len(slots):
            texts = [_placed(message, slots, r) for r in candidates]
            return Standalone(texts[0], "placed", tuple(candidates), f"two candidates, {both}: one query per reading", readings=tuple(texts[1:]))
    if slots and recent:
        out, used = message, []
        for start, end, plural, possessive, person in reversed(slots):  # right to left: offsets stay valid
            # "she", "his": a person, whom a proper name names (not "Melania Trump's religion"),
            # one and without "the" (not "the Beatles", "the Nobel Prize").
            people = [r for r in recent if r.kind == "name" and "'s " not in r.text and not r.definite and not r.plural] if person else []
            r = _choose(people or recent, plural, tracker.turn - 1)
            used.append(r)
            out = out[:start] + (_possessive(r.placed) if possessive else r.placed) + out[end:]
        used.reverse()
        names = ", ".join(dict.fromkeys(repr(r.text) for r in used))
        distinct = tuple({r.key: r for r in used}.values())
        return _with_subject(Standalone(out, "placed", distinct, f"the reference resolved to {names}"), tracker, own, named)
    salient = [r for r in tracker.by_salience() if r.key not in own]
    if salient:
        best = salient[0]
        return _with_subject(Standalone(f"{message.rstrip()} {best.placed}", "appended", (best,), f"the conversation's focus {best.text!r} ({best.kind}) appended"), tracker, own, named)
    if previous:
        return Standalone(joined(previous, message), "previous_turn", why="no referent in the conversation: previous user turn + message")
    return Standalone(message, "none", why="no referent in the conversation and no earlier user turn")


# "And the Pro?", "what about unopened ones in particular?": an opener, a noun phrase, a tail that
# adds nothing to ask. Anything else ("and what is the process?") is a question of its own.
_ELLIPSIS = re.compile(
    r"^\s*(?:(?:and|but|or|also|so)\s+)?(?:(?:what|how)\s+about\s+|(?:the\s+)?same\s+)?(?:(?:for|with|in|on|to)\s+)?(?P<np>.+?)"
    r"(?:,?\s+(?:in particular|instead|then|too|as well|though|now))?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def _ellipsis(message: str, previous: str, tracker: Tracker) -> Standalone | None:
    """The previous question about the new subject: "And the Pro?" after "How long is the
    warranty on the Halden Solace 7?" asks "How long is the warranty on the Halden Solace 7 Pro?";
    "what about unopened ones?" after "What's the return window for earbuds?" asks it of unopened
    earbuds. What gives way in the previous question: a referent sharing a word with the new one
    ("the cons" for "the pros and cons"), else one of the same sort (a product for a product, a
    pro-form's noun of its number), else its topic. None when the message is more than an opener
    and a noun phrase, or when nothing in the previous question can give way."""
    # An ellipsis is a few words; the bound also keeps the pattern's work small on any message.
    found = _ELLIPSIS.match(message) if len(message) <= ELLIPSIS_CHARS else None
    if found is None:
        return None
    said = _LEADING_ARTICLE.sub("", found.group("np").strip())
    olds = tracker.mentions(previous)
    pro_form = re.fullmatch(r"(?P<mods>(?:[\w-]+\s+){1,3})(?P<one>ones?)", said, re.IGNORECASE)
    if pro_form is not None:  # "unopened ones": the previous question's noun, so modified
        plural = pro_form.group("one").lower() == "ones"
        for old in olds:
            if old.kind == "phrase" and old.plural == plural and (at := _span(previous, old, None)) is not None:
                text = f"{pro_form.group('mods')}{_noun_of(_LEADING_ARTICLE.sub('', old.text))}"
                return Standalone(previous[: at[0]] + text + previous[at[1] :], "ellipsis", (), f"the previous question about {text!r} (in place of {old.text!r})")
        return None
    new = tracker.mentions(message)
    if not new:
        return None
    subject = new[0]
    if _LEADING_ARTICLE.sub("", subject.text).lower() != said.lower() and subject.kind != "entity":
        return None  # the words after the opener are not one noun phrase
    olds = [r for r in olds if r.key != subject.key]
    # A referent the new one names part of ("the cons" of "the pros and cons"), or whose noun it
    # keeps with other modifiers ("unopened earbuds" for "opened earbuds").
    sharing = [r for r in olds if r.kind != "entity" and (set(subject.key) < set(r.key) or subject.key[-1:] == r.key[-1:])]
    same_kind = [r for r in olds if (r.kind == "entity") == (subject.kind == "entity")]
    # A name for a name, the innermost first: "Aero X2", not "warranty on the Aero X2".
    same_kind.sort(key=lambda r: (r.kind != subject.kind, r.kind == subject.kind and len(r.text)))
    spans: list[tuple[Referent | None, tuple[int, int] | None]] = [(r, _span(previous, r, tracker.catalog)) for r in sharing or same_kind or olds]
    if subject.kind == "entity" and tracker.catalog is not None and not same_kind:
        # A product said by a name it shares with another ("Aero X2"): the catalog still finds it.
        spans = [(None, (m.start, m.end)) for m in reversed(tracker.catalog.mentions(previous))]
    for gives_way, at in spans:
        if at is None:
            continue
        text = subject.text if subject.kind == "entity" else said
        instead = previous[at[0] : at[1]] if gives_way is None else gives_way.text
        before = previous[: at[0]]
        if subject.kind == "name" and not _LEADING_ARTICLE.match(found.group("np").strip()):
            before = re.sub(r"\b(?:the|a|an)\s+$", "", before, flags=re.IGNORECASE)  # "the First Lady" -> "Ivanka"
        return Standalone(before + text + previous[at[1] :], "ellipsis", (subject,), f"the previous question about {subject.text!r} (in place of {instead!r})")
    return None


def _noun_of(words: str) -> str:
    """What a pro-form "one(s)" stands for in `words`: the phrase less its leading adjectives
    ("opened earbuds" -> "earbuds", "wireless charging cases" -> "charging cases"), whose place
    the pro-form's own modifiers take ("unopened ones")."""
    kept = words.split()
    while len(kept) > 1 and _adjective(kept[0].lower()):
        kept = kept[1:]
    return " ".join(kept)


def _adjective(word: str) -> bool:
    """A word that reads as an adjective before a noun, without a tagger: a participle ("opened",
    "worn"), an adjective's ending ("wireless", "portable"), a relative adjective ("main")."""
    return word.endswith(("ed", *ADJECTIVE_ENDINGS, "less")) or word in PARTICIPLES or word in DOMAIN_ADJ


def _span(text: str, referent: Referent, catalog: Catalog | None) -> tuple[int, int] | None:
    """Where `text` says `referent`: a product by any of its names, anything else as written."""
    if referent.kind == "entity" and catalog is not None:
        return next(((m.start, m.end) for m in catalog.mentions(text) if [e.id for e in m.entities] == [referent.key[1]]), None)
    at = text.find(referent.text)
    return None if at < 0 else (at, at + len(referent.text))


# "Which one charges faster?", "which of them is lighter?", "which is cheaper?"
_WHICH = re.compile(r"^\W*(?:(?:and|so|ok|okay),?\s+)?which\b(?!\s+(?:[a-z]+\s+)?(?:of\s+)?(?:your|you|my|our)\b)", re.IGNORECASE)


def _placed(message: str, slots: Sequence[tuple[int, int, bool | None, bool, bool]], referent: Referent) -> str:
    out = message
    for start, end, _plural, possessive, _person in reversed(slots):
        out = out[:start] + (_possessive(referent.placed) if possessive else referent.placed) + out[end:]
    return out


def _with_subject(form: Standalone, tracker: Tracker, own: set[tuple[str, ...]], named: bool) -> Standalone:
    """The form with the conversation's subject after it, when the form does not already say it
    and the message names nothing of its own ("what was the culture like?" in a conversation
    about the Ottoman Empire is still about the Ottoman Empire)."""
    subject = tracker.subject()
    if subject is None or subject.key in own or named or any(r.kind == "entity" or r.key == subject.key for r in form.referents):
        return form
    if set(subject.key) & set(analyze(form.text)):  # "reef bleaching" already speaks of "coral reefs"
        return form
    return Standalone(f"{form.text.rstrip()} {subject.placed}", form.method, (*form.referents, subject), f"{form.why}; the conversation's subject {subject.text!r} kept")


def joined(previous: str, message: str) -> str:
    """`previous`, a space, then `message`; a turn without closing punctuation gets a full stop,
    so that no name seems to run across the join ("Yes" + "How can I ..." is not a "Yes How")."""
    previous = previous.strip()
    if previous and previous[-1] not in ".?!;:":
        previous += "."
    return f"{previous} {message.strip()}"
