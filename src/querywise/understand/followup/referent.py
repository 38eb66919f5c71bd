"""The standalone form of a follow-up without an LLM: what the conversation is about, carried into
the message.

Salience tracking (an entity grid reduced to one column per referent): every earlier turn, user
or assistant, oldest first, mentions referents --

- catalog entities, longest name first, by their canonical name (an alias or a part number
  names the entity); a partial name that completes the referent in focus ("the Pro" after the
  Solace 7 is the Solace 7 Pro: "Solace 7" + "Pro" is a name the catalog knows);
- identifiers (`[A-Z]{2,}-\\d{3,}` and the like: order, part and ticket numbers);
- noun phrases: runs of content words, less a verb the sentence's shape gives away (after a
  wh-word, a subject pronoun or "to": "what *causes* throat cancer"; a do-question's verb after its
  subject: "why did the A380 *stop* being produced").

A user turn's unresolved pronoun mentions the referent in focus again, so the conversation's
subject survives a chain of "it"s. An answer mentions only what the deployment knows (a product,
an identifier): its other words are searched beside the form, never made referents. One more
thing is read off an answer: the place it gave to a where-question that did not name its own
subject (`Tracker.answered`), which a following "there" takes. An "it" or "they" does not take
the name an answer gave to a what-question ("Freak Out!" after "What was their first album?"):
that rule gained on the dialogues it was chosen on (0.578/0.774 -> 0.636/0.867), nothing on the
held-out QA dialogues and lost on the held-out passage dialogues (0.400/0.568 -> 0.382/0.538,
bench/results/rewrite_passages.md). Each mention
weighs `DECAY ** turns_back`, a user turn's more than an answer's (`ASSISTANT_WEIGHT`), an entity's or identifier's more than a phrase's
(`PHRASE_WEIGHT`), the first phrase of a turn (its topic) more than the others. A turn with no
content ("thanks!", "ok") mentions nothing.

The message is then resolved to the most salient compatible referent (number agreement: "they"
wants a plural or several entities, "it" a singular, never whom "he" or "she" took nor a noun of
a person class while a thing is there; "he" or "she"
a person -- a full name as people's are written, a noun of a person class ("the leader") -- or
nobody, and the pronoun stays as typed; a name over a common noun, `NAME_BONUS`): a pronoun or demonstrative is replaced where it stands ("does it cover
water damage?" -> "does the Halden Solace 7 Pro cover water damage?"); an elliptical opener with
one noun phrase asks the previous user turn's question, as resolved itself, of the new subject
("And the Pro?" -> "How long is the warranty on the Halden Solace 7 Pro?") when something says
what the new one replaces (a product for a product, a word both share, a proper name, or the
conversation's subject itself, which then moves to the new one); without that evidence ("What
about the locks?" after "How many workers died?") and for a "what about" with words of its own,
the message is kept with the subject beside it. A longer opener keeps the previous turn in front
of it; any other reference (a definite with no anchor, a bare comparative, topic continuity) gets
the referent appended. The conversation's subject (`Tracker.subject`: the latest name two of the
last `SUBJECT_TURNS` user turns named, themselves or by a pronoun -- not what a form appended --,
else the first user turn's topic) follows a form whose message names nothing of its own and whose
referents do not already speak of it. Two products or names of the latest user turn and a pointer to one of them are two
readings (`Standalone.readings`, each searched), "which one ...?" a comparison naming each: never
one picked silently. When no referent is found the form is the previous user turn + the message
(`concat_standalone`), and `Standalone.method` says so. The guard checks the result like any
rewrite.

Where the message itself points into the assistant's last answer -- an item of the list it gave
("the second one", "number 2", "the latter"), "he" or "she" when no one the user named is a
person, a kind it just introduced ("this reaction", "the city") -- the answer's words are taken
after all (`answer_refs.answer_referent`, tried after `resolve` on every user turn).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from querywise.catalog import Catalog, Entity
from querywise.text import analysed_part, analyze
from querywise.understand.followup.message import (
    ADJECTIVE_ENDINGS,
    DOMAIN_ADJ,
    PARTICIPLES,
    PERSON_NOUNS,
    PERSONAL,
    PLACE_PREP,
    Message,
)
from querywise.understand.followup.phrases import Phrase, first_name, is_plural, noun_phrases

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
#: How many of the latest user turns (that named anything) the subject is read from: a name two
#: of them named. Chosen on CAsT 2020's train and val topics and dialogues_read among 2 and 3.
SUBJECT_TURNS = 3
#: The longest message read as an opener and one noun phrase ("And the Pro?").
ELLIPSIS_CHARS = 120
#: Answers are long: only their first words are read for referents.
ANSWER_CHARS = 600

_IDENTIFIER = re.compile(r"\b[A-Za-z]{2,}-?\d{3,}\b|\b\d{6,}\b")
_PLURAL_PRONOUNS = frozenset(["they", "them", "their", "theirs", "themselves", "these", "those"])
_SINGULAR_PRONOUNS = frozenset(["it", "its", "itself", "this", "that"])
_PERSON_PRONOUNS = frozenset(["he", "him", "his", "himself", "she", "her", "herself"])
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
    person: bool = False  # "he" or "she" took it: "it" does not
    place: bool = False  # a name said after "in", "at", ...: what "there" stands for

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
    # An ellipsis that put its noun phrase where the conversation's subject stood ("What about a
    # food truck?" after "How much does a used Lamborghini cost?"): the subject from then on.
    new_subject: bool = False


@dataclass
class Tracker:
    """Referents of a conversation, most salient first (see the module's docstring)."""

    catalog: Catalog | None = None
    referents: dict[tuple[str, ...], Referent] = field(default_factory=dict)
    turn: int = 0
    topic: tuple[str, ...] | None = None  # the first user turn's topic (its first referent)
    user_turns: list[tuple[tuple[str, ...], ...]] = field(default_factory=list)  # what each user turn named, in order
    # The name the latest turn gave in answer to a user's what/which/who/where question ("Where
    # was it filmed?" -- "In Baltimore."): a place is what a "there" of the next question takes
    # (`resolve`). None when the latest turn is no such answer.
    answered: Referent | None = None
    _asked: str | None = None  # the wh-word of the latest user turn, when it asks for a name

    def read(self, text: str, role: str = "user", carried: Sequence[Referent] = (), appended: Sequence[Referent] = ()) -> None:
        """Decay every referent by one turn, then add this turn's mentions: `carried` (what its
        pronouns were resolved to: the turn's centre, first), its own, then `appended` (what its
        standalone form added)."""
        for r in self.referents.values():
            r.score *= DECAY
        weight = 1.0 if role == "user" else ASSISTANT_WEIGHT
        said = text if role == "user" else text[:ANSWER_CHARS]
        own = [r for r in self.mentions(said) if role == "user" or r.kind in _KNOWN_KINDS]
        # What the deployment knows first, else the name a person would read as the answer.
        self.answered = (own[0] if own else _answer_name(text, self._asked)) if role != "user" and self._asked else None
        if role == "user":
            self._asked = _asks_name(text)
        mentions = [*carried, *own, *appended]
        if role == "user" and mentions and self.topic is None:
            self.topic = mentions[0].key
        if role == "user" and (carried or own):
            # What the turn named, itself or by a pronoun: not what its form appended, or an
            # appended subject would keep itself the subject ("the last two turns both named it").
            self.user_turns.append(tuple(dict.fromkeys(r.key for r in [*carried, *own])))
        seen: set[tuple[str, ...]] = set()
        for r in mentions:
            if r.key in seen:
                continue
            w = weight * (PHRASE_WEIGHT if r.kind in ("name", "phrase") else 1.0) * (TOPIC_BONUS if not seen else 1.0)
            kept = self.referents.setdefault(r.key, Referent(r.text, r.kind, r.key, r.plural, definite=r.definite))
            kept.person |= r.person
            kept.place |= r.place
            kept.score += w
            kept.last_turn, kept.last_rank = self.turn, len(seen)
            seen.add(r.key)
        self.turn += 1

    def move_subject(self, referent: Referent) -> None:
        """The conversation moved on to `referent` (an ellipsis put it where the subject stood):
        it is the subject from now on, and what the turns before named no longer counts."""
        self.topic = referent.key
        del self.user_turns[:-1]

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
        """What the conversation is about: the latest name two of the last `SUBJECT_TURNS` user
        turns that named anything both named, themselves or by a pronoun (the subject moves with
        the conversation: "Salt Lake City" after two turns about it in a talk that opened on
        Utah), else the first user turn's topic."""
        recent = self.user_turns[-SUBJECT_TURNS:]
        for n in range(len(recent) - 1, 0, -1):
            kept = [k for k in recent[n] if any(k in earlier for earlier in recent[:n]) and self.referents[k].kind != "phrase"]
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
                before = msg.at(p.first - 2 if p.definite else p.first - 1)
                # A name's -s is no plural ("Serena Williams", "Paris"); with "the" it may be ("the Beatles").
                proper = p.named and p.head.split()[-1][:1].isupper() and not p.definite and " and " not in p.head
                found.append((p.at, Referent(p.words, "name" if p.named else "phrase", key, plural=is_plural(p.head) and not proper, definite=p.definite,
                                             place=p.named and before in PLACE_PREP)))
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


# A question whose answer is a name: "What was their first album?", "Who took over?", "Where did he
# go?", "Is there one in our galaxy?"
_ASKS_NAME = re.compile(r"^\W*(?:(?:and|so|ok|okay|oh),?\s+)?(what|which|who|whom|where|(?:is|are|was|were) there)\b", re.IGNORECASE)


def _asks_name(question: str) -> str | None:
    """The wh-word of a question that asks for a name; None for any other turn, and for a
    question that names its own subject ("What is the Great Barrier Reef?": the answer describes
    it, and a name in the answer is in passing)."""
    found = _ASKS_NAME.match(question)
    if found is None or any(t.named and t.text[:1].isupper() for t in Message(question, []).toks):
        return None
    return found.group(1).lower()


def _answer_name(answer: str, asked: str) -> Referent | None:
    """The first proper name of an answer's first sentence, as a referent (a place when the
    question asked where): the name the user asked for, never the sentence around it."""
    first = _SENTENCE.match(analysed_part(answer[:ANSWER_CHARS]))
    found = first_name(Message(first.group(0), [])) if first else None
    if found is None:
        return None
    words, definite = found
    key = tuple(analyze(words))
    if not key:
        return None
    proper_plural = definite and is_plural(words.split()[0])  # "the Mothers of Invention", "the Beatles"
    return Referent(words, "name", key, plural=proper_plural, definite=definite, person=asked in ("who", "whom"), place=asked == "where")


_SENTENCE = re.compile(r"\s*[^.?!]+[.?!]*")


def _entity(e: Entity) -> Referent:
    return Referent(e.name, "entity", ("entity", e.id))


def _person(r: Referent) -> bool:
    """Whether "he" or "she" can take `r`: one person's name as names of people are written
    (capitalised words, no article, no acronym: not "the Dead", "GDPR" or "the Black Lives Matter
    campaign"), or a noun of a person class ("the leader")."""
    words = r.text.split()
    if r.person:
        return True
    if r.plural or "'s" in r.text or r.kind not in ("name", "phrase"):
        return False
    if r.kind == "phrase":
        return _person_noun(r)
    return not r.definite and len(words) <= 4 and all(w[0].isupper() and not w.isupper() for w in words)


def _person_noun(r: Referent) -> bool:
    """A common noun of a person class ("the woman", "the leader"): whom "he" or "she" takes."""
    return r.kind == "phrase" and r.text.split()[-1].lower() in PERSON_NOUNS


def _full_names(people: list[Referent]) -> list[Referent]:
    """The people of the latest turn that named any, full names ("Ben Franklin") over one word
    that also names places ("Turkey")."""
    latest = [r for r in people if r.last_turn == max(p.last_turn for p in people)]
    return [r for r in latest if r.person or r.kind == "phrase" or " " in r.text] or latest


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
        plural = True if w in _PLURAL_PRONOUNS else False if w in _SINGULAR_PRONOUNS or w in _PERSON_PRONOUNS else None
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
    # A final particle after a clause with its own pronoun ("Do algae do it too?") is a question of
    # its own: the pronoun is resolved in place, the previous question not joined in front.
    particle_only = not any(c.startswith(("opener:", "short")) for c in cues) and any(c.startswith(("pronoun:", "demonstrative:")) for c in cues)
    typed = message
    there = [t for i, t in enumerate(m.toks) if m.locative_there(i)] if "pro-form:there" in cues else []
    # The place the user just asked where to find, else the latest place named after "in", "at".
    place = tracker.answered if tracker.answered is not None and tracker.answered.place else next((r for r in tracker.by_recency() if r.place), None)
    if there and place is not None:
        # "restaurants there" after "restaurants in Tokyo": the place, with its preposition.
        for t in reversed(there):
            message = f"{message[: t.start]}in {place.placed}{message[t.start + len(t.text):]}"
        m = Message(message, [(x.start, x.end) for x in catalog.mentions(message)] if catalog is not None else [], catalog=catalog is not None)
        if all(c == "pro-form:there" for c in cues):
            return Standalone(message, "placed", (place,), f"'there' resolved to {place.text!r}")
    opener = any(c.startswith(_OPENER_CUES) for c in cues) or _ABOUT.match(typed) is not None
    if opener and previous and not particle_only:
        # The ellipsis reads the message as typed ("Why there?" is no noun phrase to swap in);
        # a join carries its "there" resolved ("Where was it filmed? Why in Albuquerque?").
        message, resolved_there = typed, message
        swapped = _ellipsis(message, previous, tracker)
        if swapped is None and _ABOUT.match(message) and tracker.mentions(message) and not any(c.startswith(("pronoun:", "demonstrative:")) for c in cues):
            # "What about benchmarks for music?": more than one noun phrase, a subject of its own,
            # which the previous question's frame would bury.
            swapped = Standalone(message, "none", why="'what about' with words of its own")
        if swapped is not None and swapped.method == "none":
            beside = _beside_subject(message, tracker)
            return beside if beside is not None else Standalone(joined(previous, resolved_there), "previous_turn", why=swapped.why)
        if swapped is not None:
            return swapped
        if not any(c in _POSSESSIVE_CUES for c in cues):
            return Standalone(joined(previous, resolved_there), "previous_turn", why="an elliptical follow-up keeps the previous question's frame")
        message = resolved_there
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
    # "she", "his": a person, whom a proper name or a noun of a person class names (not "Melania
    # Trump's religion", not "the Dead"); none said: the pronoun stays as typed. People first, so
    # that "it" in "how did he cook it?" is not whom "he" took.
    took: dict[int, Referent] = {}
    for n in sorted(range(len(slots) if recent else 0), key=lambda n: not slots[n][4]):
        plural, person = slots[n][2], slots[n][4]
        # "it" takes a thing: not whom "he" or "she" took, nor a noun of a person class ("How did it
        # affect her work?" after "Was she the first woman ...?"), while anything else is there.
        people = _full_names([r for r in recent if _person(r)]) if person else [
            r for r in recent if not (r.person or any(t.person and t.key == r.key for t in took.values()) or _person_noun(r)) or plural] or recent
        if people:
            chosen = _choose(people, plural, tracker.turn - 1)
            took[n] = replace(chosen, person=True) if person else chosen
    out, used = message, [took[n] for n in sorted(took)]
    for n in sorted(took, reverse=True):  # right to left: offsets stay valid
        start, end, _plural, possessive, _person_slot = slots[n]
        r = took[n]
        out = out[:start] + (_possessive(r.placed) if possessive else r.placed) + out[end:]
    if used:
        names = ", ".join(dict.fromkeys(repr(r.text) for r in used))
        distinct = tuple({r.key: next((u for u in used if u.key == r.key and u.person), r) for r in used}.values())  # a person stays one
        placed = Standalone(out, "placed", distinct, f"the reference resolved to {names}")
        # The answer's name is specific already: the subject after it would add what the user did not ask.
        return _with_subject(placed, tracker, own, named)
    salient = [r for r in tracker.by_salience() if r.key not in own]
    if salient:
        best = salient[0]
        return _with_subject(Standalone(f"{message.rstrip()} {best.placed}", "appended", (best,), f"the conversation's focus {best.text!r} ({best.kind}) appended"), tracker, own, named)
    if previous:
        return Standalone(joined(previous, message), "previous_turn", why="no referent in the conversation: previous user turn + message")
    return Standalone(message, "none", why="no referent in the conversation and no earlier user turn")


# "And the Pro?", "what about unopened ones in particular?": an opener, a noun phrase, a tail that
# adds nothing to ask. Anything else ("and what is the process?") is a question of its own.
_REACTION = r"(?:(?:interesting|ok|okay|oh|great|cool|wow|nice|i see)\W+)?"
# "What about ...?" after a reaction ("Interesting. What about a food truck?"): an opener the gate
# may read as continuity only.
_ABOUT = re.compile(rf"^\s*{_REACTION}(?:what|how)\s+about\b", re.IGNORECASE)
_ELLIPSIS = re.compile(
    rf"^\s*{_REACTION}(?:(?:and|but|or|also|so)\s+)?(?:(?:what|how)\s+about\s+|(?:the\s+)?same\s+)?(?:(?:for|with|in|on|to)\s+)?(?P<np>.+?)"
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
    # A referent the new one names part of ("the cons" of "the pros and cons"), whose noun it keeps
    # with other modifiers ("unopened earbuds" for "opened earbuds"), or another word of
    # ("high cholesterol" for "high blood carbon dioxide"), the part named first.
    sharing = [r for r in olds if r.kind != "entity" and set(subject.key) & set(r.key)]
    sharing.sort(key=lambda r: not (set(subject.key) < set(r.key) or subject.key[-1:] == r.key[-1:]))
    same_kind = [r for r in olds if (r.kind == "entity") == (subject.kind == "entity")]
    current = tracker.subject()
    moved = False  # the subject gives way to the new noun phrase: the conversation moved on
    asked = [r for r in olds if (at := _span(previous, r, None)) is not None and not _after_question(previous, at[0])]  # not a subject a form appended
    if not sharing and subject.kind == "phrase" and current is not None and any(r.key == current.key for r in asked):
        # No word in common, but what gives way is the conversation's subject: a change of
        # subject asked in the previous question's words ("How much does a pimped-out food truck
        # cost?" after the used Lamborghini).
        sharing = [r for r in olds if r.key == current.key]
        moved = True
    if not sharing and subject.kind == "phrase":
        # What gives way is a guess: nothing but its place says "the locks" stand where "workers"
        # stood ("How many locks died?"). A catalog's product, a word both share, a proper name
        # (one of a kind: "Ivanka" for "the First Lady", "Venus flytraps" for "predator plants")
        # are evidence; without it the previous question is not rewritten, and the caller
        # searches the message with the subject beside it.
        return Standalone(message, "none", why=f"no evidence of what {subject.text!r} replaces in the previous question")
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
        return Standalone(before + text + previous[at[1] :], "ellipsis", (subject,), f"the previous question about {subject.text!r} (in place of {instead!r})",
                          new_subject=moved)
    return None


def _after_question(text: str, at: int) -> bool:
    """Whether position `at` of `text` comes after its question, as a subject a form appended
    does ("How many workers died? the Panama Canal")."""
    return re.sub(r"\b(?:the|a|an)\s*$", "", text[:at], flags=re.IGNORECASE).rstrip().endswith(("?", "."))


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


def _beside_subject(message: str, tracker: Tracker) -> Standalone | None:
    """The message with the conversation's subject after it ("What about the locks? the Panama
    Canal"), when the message does not already say it; None without a subject."""
    subject = tracker.subject()
    if subject is None or set(subject.key) & set(analyze(message)):
        return None
    return Standalone(f"{message.rstrip()} {subject.placed}", "appended", (subject,), f"an ellipsis whose referent is a guess: the conversation's subject {subject.text!r} beside the message")


def joined(previous: str, message: str) -> str:
    """`previous`, a space, then `message`; a turn without closing punctuation gets a full stop,
    so that no name seems to run across the join ("Yes" + "How can I ..." is not a "Yes How")."""
    previous = previous.strip()
    if previous and previous[-1] not in ".?!;:":
        previous += "."
    return f"{previous} {message.strip()}"
