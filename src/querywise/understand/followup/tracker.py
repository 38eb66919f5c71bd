"""Salience tracking for the standalone form of a follow-up: what the conversation has talked
about, and how salient each thing is now.

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
an identifier): its other words are searched beside the form, never made referents. Two more
things are read off an answer: which of the opening's things the first answer takes up, when its
first words name one and its first sentence nothing of the topic read (`Tracker._echoed`: "Is it
worth replacing my gas hob with an induction cooktop?" -- "Induction cooktops heat ..."; on the training files,
added terms 0.411/0.519 -> 0.427/0.531 on rows with answers); and the place it gave to a
where-question that did not name its own subject (`Tracker.answered_place`), which a following
"there" takes. An "it" or "they" does not take
the name an answer gave to a what-question ("Freak Out!" after "What was their first album?"):
that rule gained on the dialogues it was chosen on (0.578/0.774 -> 0.636/0.867), nothing on the
held-out QA dialogues and lost on the held-out passage dialogues (0.400/0.568 -> 0.382/0.538,
bench/results/rewrite_passages.md). Each mention
weighs `DECAY ** turns_back`, a user turn's more than an answer's (`ASSISTANT_WEIGHT`), an entity's or identifier's more than a phrase's
(`PHRASE_WEIGHT`), the first phrase of a turn (its topic) more than the others. A turn with no
content ("thanks!", "ok") mentions nothing.

A first turn that states the speaker's situation and asks ("My dad started lisinopril ... Could it
be the pill?") is about the thing it introduces or the rarest thing it names, never the person,
the place or the time, when its closing question names nothing of its own (`situation.py`).

A first turn that is a title and a section, as QA dialogues open ("Nick Drake. Pink Moon.",
"Tinariwen — Origins", "Can (band). Formation."), names the title first, as a name, then the
section's referents (`_title_mentions`); a person's title over a section that names a thing is
never what "it" takes, and the section's name follows every form that does not say it
(`Tracker.with_section`: "why did he have to carry the team?" in "Garrincha — 1962 FIFA World
Cup"). Chosen on dialogues_train_9 (QuAC-style, rules alone): user-only rows added terms
0.520/0.651 -> 0.624/0.662; pooled training files 0.512/0.577 -> 0.542/0.577, rows with answers
unchanged (the expletive "it" and "for women" changes of the same commit included). The section
is left out after a message that names someone the title turn did not (`_names_its_own`), and a
heading read as a common noun is a named section once an answer writes its first word as a name
(`_named_heading`): user-only rows of the training and development files (rules alone)
0.548/0.593 -> 0.552/0.602.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from querywise.catalog import Catalog, Entity
from querywise.text import analysed_part, analyze
from querywise.understand.followup.message import AUX, BE, PERSON_NOUNS, PLACE_PREP, PREP, TITLE_ABBREVIATIONS, Message
from querywise.understand.followup.people import Gender, answer_people
from querywise.understand.followup.phrases import AGE, NOT_NAMES, PERIOD, Phrase, first_name, is_plural, noun_phrases
from querywise.understand.followup.situation import outranks, situation_topic

__all__ = ["ANSWER_CHARS", "DECAY", "SUBJECT_TURNS", "Method", "Referent", "Standalone", "Tracker"]

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
#: How many of the latest user turns (that named anything) the subject is read from: a name two
#: of them named. Chosen on CAsT 2020's train and val topics and dialogues_read among 2 and 3.
SUBJECT_TURNS = 3
#: The first answer's first words, where it names what it takes up (`Tracker._echoed`).
ECHO_WORDS = 8
#: Answers are long: only their first words are read for referents.
ANSWER_CHARS = 600

_IDENTIFIER = re.compile(r"\b[A-Za-z]{2,}-?\d{3,}\b|\b\d{6,}\b")

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
    gender: Gender = ""  # "m" or "f" once "he" or "she" took it, or an answer's pronoun after it said so

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
    # The place the latest turn gave in answer to the user's where-question ("Where was it
    # filmed?" -- "In Baltimore."): what a "there" of the next question takes (`resolve`). None
    # when the latest turn is no such answer.
    answered_place: Referent | None = None
    _asked_where: bool = False  # the latest user turn asked where, naming no subject of its own
    # What the latest user turn named, itself or by a pronoun (not what its form appended): what an
    # answer's person is newer than. None before any user turn.
    latest_named: tuple[tuple[str, ...], ...] | None = None
    answered: bool = False  # the latest turn read is an answer: what the user asked before it was answered
    section: tuple[str, ...] | None = None  # the name a title turn's section gave ("Garrincha — *1962 FIFA World Cup*")
    _heading: tuple[str, ...] | None = None  # a title's section read as a common noun ("Manchester United F.C. *Munich air disaster*")

    def read(self, text: str, role: str = "user", carried: Sequence[Referent] = (), appended: Sequence[Referent] = ()) -> None:
        """Decay every referent by one turn, then add this turn's mentions: `carried` (what its
        pronouns were resolved to: the turn's centre, first), its own (a user turn's closing
        question's topic before the context it gives, `asked_topic`), then `appended` (what its
        standalone form added)."""
        for r in self.referents.values():
            r.score *= DECAY
        weight = 1.0 if role == "user" else ASSISTANT_WEIGHT
        said = text if role == "user" else text[:ANSWER_CHARS]
        own = [self._whole(r) if role == "user" else r for r in self.mentions(said) if role == "user" or r.kind in _KNOWN_KINDS]
        if role == "user" and not self.user_turns and (title := _title_mentions(self, said)) is not None:
            own = title  # "Tinariwen — Origins": the title is the subject, the section after it
            self.section = next((r.key for r in title[1:] if r.kind == "name"), None)
            self._heading = next((r.key for r in title[1:]), None) if self.section is None else None
        asked = asked_topic(said) if role == "user" else None
        topic = next((r for r in self.mentions(asked[0]) if r.key == asked[1]), None) if asked is not None else None
        if role == "user" and not self.user_turns and (topic is None or (topic.kind != "name" and len(topic.key) == 1)):
            # A common word the closing question names ("should she take it with *food*?", "is that
            # a *mistake*?") is less what the situation is about than a rarer thing its story names.
            story = self._situation_topic(said)
            if story is not None and (topic is None or outranks(story.text, topic.text)):
                topic = story
        if topic is not None:
            # The question's topic is the turn's centre, before its context; read in the question
            # alone, where the sentence's shape shows its verb ("would a keyboard *help*?").
            own = [topic, *(r for r in own if not set(topic.key) <= set(r.key))]
        self.answered_place = _answer_place(text) if role != "user" and self._asked_where else None
        self.answered = role != "user"
        if role == "user":
            self._asked_where = _asks_where(text)
        if role != "user":
            self._named_heading(said)
            self._genders(said)
            self._echoed(said)
        mentions = [*carried, *own, *appended]
        if role == "user" and mentions and self.topic is None:
            self.topic = mentions[0].key
        if role == "user":
            # What the turn named, itself or by a pronoun: not what its form appended, or an
            # appended subject would keep itself the subject ("the last two turns both named it").
            self.latest_named = tuple(dict.fromkeys(r.key for r in [*carried, *own]))
            if self.latest_named:
                self.user_turns.append(self.latest_named)
        seen: set[tuple[str, ...]] = set()
        for r in mentions:
            if r.key in seen:
                continue
            w = weight * (PHRASE_WEIGHT if r.kind in ("name", "phrase") else 1.0) * (TOPIC_BONUS if not seen else 1.0)
            kept = self.referents.setdefault(r.key, Referent(r.text, r.kind, r.key, r.plural, definite=r.definite))
            kept.person |= r.person
            kept.place |= r.place
            kept.gender = r.gender or kept.gender
            kept.score += w
            kept.last_turn, kept.last_rank = self.turn, len(seen)
            seen.add(r.key)
        self.turn += 1

    def _situation_topic(self, opening: str) -> Referent | None:
        """The topic of an opening that states the speaker's situation (`situation.situation_topic`:
        "My dad started lisinopril ... Could it be the pill?" is about lisinopril); None for any other
        opening, or one that names a product the catalog knows."""
        if self.catalog is not None and self.catalog.mentions(opening):
            return None
        found = situation_topic([s.strip() for s in _SENTENCES.findall(analysed_part(opening)) if s.strip()], self.mentions)
        if found is None:
            return None
        words, mention = found
        if words == mention.text:
            return mention
        key = tuple(analyze(words))
        return Referent(words, mention.kind, key, is_plural(words), definite=mention.definite) if key else None

    def _genders(self, answer: str) -> None:
        """The gender an answer's pronouns give a person the user named ("Ada Lovelace was ...
        She is remembered ..."): a "he" of a later message then never takes her."""
        for person in answer_people(answer):
            kept = self.referents.get(person.key)
            if kept is not None and person.gender and not kept.gender:
                kept.gender = person.gender

    def _echoed(self, answer: str) -> None:
        """The opening's topic is what the first answer takes up, when the answer's first words
        name another of the opening's things and its first sentence none of the topic's words ("Is
        it worth replacing my gas hob with an induction cooktop?" -- "Induction cooktops heat the
        pan itself ...")."""
        if len(self.user_turns) != 1 or self.turn != 1 or self.topic is None:
            return
        first = _SENTENCE.match(analysed_part(answer))
        sentence = analyze(first.group(0)) if first else []
        if set(self.topic) & set(sentence):
            return
        opening = analyze(" ".join(first.group(0).split()[:ECHO_WORDS])) if first else []
        echoed = [k for k in self.user_turns[0] if k[0] != "entity" and set(k) <= set(opening)]
        if echoed:
            self.topic = min(echoed, key=lambda k: (-len(k), min(opening.index(t) for t in k)))  # a longer name first

    def _whole(self, part: Referent) -> Referent:
        """The first turn's topic when `part` is a name that says part of its name: "Philips"
        after the title "Philips Hue lighting system" still speaks of the system the title names
        (a title's company alone became the subject and the focus: #34)."""
        topic = self.referents.get(self.topic) if self.topic is not None else None
        if topic is not None and topic.kind == "name" and part.kind == "name" and set(part.key) < set(topic.key):
            return replace(topic, score=0.0)
        return part

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

    def with_subject(self, form: Standalone, own: set[tuple[str, ...]], named: bool) -> Standalone:
        """`form` with the conversation's subject after it, when the form does not already say it
        and the message names nothing of its own (`own` its referents' keys, `named` whether one is
        a name): "what was the culture like?" in a conversation about the Ottoman Empire is still
        about the Ottoman Empire."""
        subject = self.subject()
        if subject is None or subject.key in own or named or any(r.kind == "entity" or r.key == subject.key for r in form.referents):
            return form
        if set(subject.key) & set(analyze(form.text)):  # "reef bleaching" already speaks of "coral reefs"
            return form
        return Standalone(f"{form.text.rstrip()} {subject.placed}", form.method, (*form.referents, subject), f"{form.why}; the conversation's subject {subject.text!r} kept")

    def with_section(self, form: Standalone, message: str = "") -> Standalone:
        """`form` with the name a title turn's section gave after it, when the form does not say
        it: the questions of "Garrincha — 1962 FIFA World Cup" are asked of that cup ("why did he
        have to carry the team?"). Read from a title's section, never from a sentence: on
        dialogues_train_9 (QuAC-style), the rewrites name such a section in most rows. Not after
        a message that names something of its own (`_names_its_own`)."""
        section = self.referents.get(self.section) if self.section is not None else None
        if section is None or form.method == "none" or set(section.key) <= set(analyze(form.text)):
            return form
        if self._names_its_own(message):
            return form
        return replace(form, text=f"{form.text.rstrip()} {section.placed}", referents=(*form.referents, section), why=f"{form.why}; the title's section {section.text!r} kept")

    def _named_heading(self, answer: str) -> None:
        """A title's section opens its part, so its first word is capitalised either way and it
        reads as a common noun ("… F.C. Munich air disaster", "Petra. Nabataean kingdom"); an
        answer that writes that word capitalised inside a sentence shows it a name, an event's
        or a people's, which the rewrites carry like any named section (`with_section`). Read
        off "Munich air disaster" in the development file `dialogues_passages` and "Wu
        experiment" in dialogues_train_9 (the rewrites name them in 6 of 8 rows); the other
        headings there ("Early life", "Formation", "Continental drift") stay out: user-only rows
        of the training and development files 0.548/0.599 -> 0.552/0.602."""
        heading = self.referents.get(self._heading) if self._heading is not None else None
        if heading is None:
            return
        first = heading.text.split()[0]
        # After a lower-case word, so neither a sentence's first word nor one of a longer name's
        # ("American Lawn Tennis magazine" does not make "Tennis career" a name).
        if first[:1].isupper() and any(w[:1].islower() for w in re.findall(rf"(\S+) {re.escape(first)}\b", answer)):
            self.section, self._heading = heading.key, None

    def _names_its_own(self, message: str) -> bool:
        """Whether `message` names someone or something the title turn did not ("who was Jim
        Peters?", "when did he go back to India?" under "… — Life in England"): such a question
        carries its own content, and the people who rewrite it leave the section out: in all 11
        such rows of dialogues_train_9 and the development file `dialogues_passages` (user-only
        rows of the training and development files 0.548/0.593 -> 0.548/0.599)."""
        opening = {t for key in (self.user_turns[0] if self.user_turns else ()) for t in key}
        return any(r.kind == "name" and not set(r.key) & opening for r in self.mentions(message))

    def beside_subject(self, message: str, *, why: str = "an ellipsis whose referent is a guess") -> Standalone | None:
        """The message with the conversation's subject after it ("What about the locks? the Panama
        Canal"), when the message does not already say it; None without a subject."""
        subject = self.subject()
        if subject is None or set(subject.key) & set(analyze(message)):
            return None
        return Standalone(f"{message.rstrip()} {subject.placed}", "appended", (subject,), f"{why}: the conversation's subject {subject.text!r} beside the message")

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
                                             place=p.named and (before in PLACE_PREP or _of_a_thing(msg, p)))))
        # Names (catalog, identifiers, phrases with a proper name) rank before common nouns: "the
        # warranty on the Vela X3" is about the Vela X3. A period ("the 1970s", "1962") is when,
        # not what: it ranks after every other referent ("what caused stagflation in the 1970s?").
        return [r for _, r in sorted(found, key=lambda x: (PERIOD.fullmatch(x[1].text) is not None, x[1].kind == "phrase", x[0]))]

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


# The parts of a title turn: "Nick Drake. Pink Moon.", "Tinariwen — Origins".
_TITLE_PARTS = re.compile(r"\s+[—–-]\s+|(?<=[^\s.])\.\s+")
# A disambiguator after a title: "Can (band)".
_DISAMBIGUATOR = re.compile(r"\s*\([^)]*\)")
_TITLE_JOINERS = frozenset(["of", "and", "de", "da", "do", "dos", "la", "le", "van", "von", "the", "du", "del"])
#: A title turn is short: a name and a section heading.
TITLE_WORDS = 10


def _title_mentions(tracker: Tracker, text: str) -> list[Referent] | None:
    """The referents of a first turn that is a title and a section, as QA dialogues open
    ("Nick Drake. Pink Moon.", "Tinariwen — Origins", "Can (band). Formation."): the title, a
    name of capitalised words, first (the conversation's subject), then what the section names.
    Read as a sentence, a one-word name opening it is no name ("Tinariwen") and a section's name
    came first ("Origins"): dialogues_train_9's conversations read "were Origins involved ...?".
    None when the turn is no such title (a question, a sentence, one part)."""
    if "?" in text or len(text.split()) > TITLE_WORDS or (tracker.catalog is not None and tracker.catalog.mentions(text)):
        return None  # a product the catalog knows stays an entity ("Vela X3. Warranty.")
    parts = [p.strip(" .") for p in _TITLE_PARTS.split(text.strip())]
    parts = [p for p in parts if p]
    if len(parts) < 2 or not all(p[:1].isupper() or p[:1].isdigit() for p in parts):
        return None
    words = _DISAMBIGUATOR.sub("", parts[0]).split()
    if not words or not all(w[:1].isupper() or w[:1].isdigit() or (0 < n < len(words) - 1 and w.lower() in _TITLE_JOINERS) for n, w in enumerate(words)):
        return None
    definite = words[0] == "The" and len(words) > 1
    name = " ".join(words[1:] if definite else words)
    key = tuple(analyze(name))
    if not key:
        return None
    section = [r for part in parts[1:] for r in tracker.mentions(part) if not set(r.key) <= set(key)]
    # A person's name over a section that names a thing ("Nick Drake. Pink Moon."): the work is
    # what "it" takes, never the person ("How was it recorded?").
    person = not definite and len(words) <= 4 and any(r.kind == "name" for r in section)
    title = Referent(name, "name", key, plural=definite and is_plural(words[-1]), definite=definite, person=person)
    return [title, *section]


# A sentence and its closing punctuation; an abbreviated title's full stop ends none ("Dr. Caligari").
_TITLE = "|".join(sorted(TITLE_ABBREVIATIONS))
_SENTENCES = re.compile(rf"(?:\b(?:{_TITLE})\.|[^.?!])+[.?!]*")


def asked_topic(text: str) -> tuple[str, tuple[str, ...]] | None:
    """The key of what a turn's closing question names, when a statement comes before it: "I've
    had heel pain for weeks. Could it be *plantar fasciitis*?" is about what it asks, not the
    context it gives. None when the question names nothing of its own: a thing of the speaker's
    ("is *my landlord* responsible?"), a thing the context named ("can I cut *the branches*?"),
    an infinitive's object ("the best time to see *polar bears*"), whom it is for ("for *a
    beginner*"), or no noun at all ("Are those enforceable?")."""
    said = [s.strip() for s in _SENTENCES.findall(analysed_part(text)) if s.strip()]
    if len(said) < 2 or not said[-1].endswith("?") or all(s.endswith("?") for s in said[:-1]):
        return None
    msg = Message(said[-1], [])
    # Not a date: "would a heat pump work here in *January*?" asks about the heat pump.
    found = [p for p in noun_phrases(msg) if PERIOD.fullmatch(p.words) is None and p.words.lower() not in NOT_NAMES]
    if not found:
        return None
    def predicate(p: Phrase) -> bool:  # a bare word is as often a predicate: "is that *right*?", "is it too *late*?"
        before, article = msg.at(p.first - 1), msg.at(p.first - 2)
        return " " not in p.words and not p.named and not (before in {"a", "an"} or (before in AUX and before not in BE) or before in PREP or (before in BE and article in {"what", "who"}))

    found = [p for p in found if not predicate(p)]
    if not found:
        return None
    p = min(found, key=lambda p: (not p.named, p.at))
    k = p.first - 1
    while msg.at(k) in AGE:
        k -= 1  # the phrase leaves its age out: "are the *new* over-the-counter hearing aids any good?"
    before, article = msg.at(k), msg.at(k - 1)
    if before in {"what", "which"} or (article in {"what", "which"} and before not in BE):
        return None  # what is asked ("what *weight* should I buy?"), not what it is about
    if before in {"my", "our", "your"} or (p.definite and article not in {"is", "are", "be", "this", "that"}):
        return None
    if "to" in (msg.at(p.first - 2), msg.at(p.first - 3)) or (before in {"a", "an"} and article == "for"):
        return None
    key = tuple(analyze(p.words))
    return (said[-1], key) if key else None


def _of_a_thing(msg: Message, p: Phrase) -> bool:
    """A one-word name after "of" and a word that is no person's ("the city of Florence", "the
    Battle of Hastings"): a place, never whom "he" or "she" takes ("the wife of Henry" is a person)."""
    if p.definite or " " in p.words.strip() or msg.at(p.first - 1) != "of":
        return False
    return msg.at(p.first - 2) not in PERSON_NOUNS


# A where-question: "Where did he go?", "And where was it filmed?"
_ASKS_WHERE = re.compile(r"^\W*(?:(?:and|so|ok|okay|oh),?\s+)?where\b", re.IGNORECASE)


def _asks_where(question: str) -> bool:
    """Whether a question asks where, naming no subject of its own ("Where is the Great Barrier
    Reef?": the answer describes it, and a place in the answer is in passing)."""
    return _ASKS_WHERE.match(question) is not None and not any(t.named and t.text[:1].isupper() for t in Message(question, []).toks)


def _answer_place(answer: str) -> Referent | None:
    """The first proper name of an answer's first sentence, as the place the user asked for,
    never the sentence around it."""
    first = _SENTENCE.match(analysed_part(answer[:ANSWER_CHARS]))
    found = first_name(Message(first.group(0), [])) if first else None
    if found is None:
        return None
    words, definite = found
    key = tuple(analyze(words))
    if not key:
        return None
    return Referent(words, "name", key, plural=definite and is_plural(words.split()[0]), definite=definite, place=True)


_SENTENCE = re.compile(r"\s*[^.?!]+[.?!]*")


def _entity(e: Entity) -> Referent:
    return Referent(e.name, "entity", ("entity", e.id))
