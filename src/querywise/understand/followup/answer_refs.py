"""Referents that only the assistant's last answer names: an item of the list it gave ("the second
one"), and, narrowly, the thing a pointer cannot mean among the user's own words ("he" when the
user spoke only of things, "that drug", "the city").

The tracker takes from an answer only what the deployment knows (`referent.ASSISTANT_WEIGHT`): an
answer names many things, and most pointers still mean the user's subject. These are the cases
where the message itself says it points into the answer:

- **an item of a list**: "the second one", "the third option", "the last", "number 2", and "the
  latter" / "the former" of two, when the answer holds one enumeration -- numbered or bulleted
  lines ("1.", "2)", "-", "•"), else steps told in prose ("First, ... Second, ... Finally, ...",
  "The first is X. The second, Y, ..."), else one series of its prose: after "such as",
  "include", "are", ... ("include carbon dioxide, methane, nitrous oxide, and water vapour"),
  after a colon ("three kinds of solar panels: monocrystalline, polycrystalline and thin-film",
  each item then named with its kind: "polycrystalline solar panels"; two items when the words
  before the colon announce two), or opening its sentence ("A, B and C are the main causes");
  not a series after "are" that says what things are or do ("These panels are much slower,
  ...", "are soaked, cooked until soft and ..."): its first item opens on no noun (training
  files' passage rows, rules alone: added terms 0.416 / 0.525 -> 0.418 / 0.529, no row worse).
  The item's name is what its line or place in the series says before its explanation ("Beta
  blockers, which are taken daily ..." -> "Beta blockers"). Two series, a position the list
  does not have, or an ordinal with a noun no list is made of ("the first album"; a noun the
  answer announced its list as is one: "the second cause" after "the main causes") leave the
  message as it is. "both" names the two items of a list of two, and "which one ...?" each item
  of a list of two to four, when the user's own turn named no two things;
- **a person**, **people named together**: "he" / "she" no one the user named can take, "they"
  for the people the answer named together (`answer_people`);
- **what the answer says in the pronoun's slot**: "seeing them" after "... the chance of seeing the
  northern lights", when the user's subject was never said with that predicate (`answer_predicate`);
- **a kind the answer just introduced**: "this reaction" after "... in a reaction called
  saponification", "that drug" after the answer's one "such as chlorthalidone", "the city" (a
  place noun) after the answer's first place ("in Dubai"), "this condition" or "the condition"
  after the one term the answer defined as one ("carpal tunnel syndrome, a condition in which
  ..."), "the treaty" after the answer's one name built on it ("the Treaty of Paris") -- only when
  no earlier user turn says that noun or names a place;
- **a compound the answer built on the message's head**: "the lagoon" after "... the Jokulsarlon
  glacier lagoon", "the pork one" after the answer's one "pork shoulder" (`answer_heads`), when no
  user turn said the head and the answer builds one compound on it; a description, so the subject
  the tracker's form gives stays beside it;
- **a term the answer defined**: a bare "that" or "this" ("What causes that?") after an answer
  that defined one new term as it brought it in ("aplastic anaemia, a rare condition in which
  ..."), when no user turn said it; not a "that" of a statement ("Why is that?", "Is that true?").

`answer_referent` returns the form, or None and the tracker's form stands. What is left of the
message after the substitution (another pronoun, an elliptical opener) is resolved as before.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import replace

from querywise.conversation import Turn
from querywise.text import analysed_part, analyze
from querywise.understand.followup.answer_heads import answer_head
from querywise.understand.followup.answer_people import answer_group, answer_persons
from querywise.understand.followup.answer_predicate import answer_predicate
from querywise.understand.followup.answer_topic import place_answer_topic
from querywise.understand.followup.message import ADJECTIVE_ENDINGS, AUX, DET, FUNCTION, PARTICIPLES, PERSONAL
from querywise.understand.followup.people import PLACE_NAME
from querywise.understand.followup.referent import resolve
from querywise.understand.followup.tracker import ANSWER_CHARS, Referent, Standalone, Tracker

__all__ = ["ITEM_WORDS", "LIST_ANSWERS", "answer_referent", "enumeration", "latest_list", "list_pointer", "listed_item"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: The most words an item's name may have: past it, the line is an explanation, not a name.
ITEM_WORDS = 10
#: A list is pointed at from up to this many answers on: "is the last one worth it?" may follow a
#: question about an item and its answer.
LIST_ANSWERS = 2

# A list line: "1. ...", "2) ...", "- ...", "• ...", "* ...".
_LINE_ITEM = re.compile(r"^[ \t]*(?:\d{1,2}[.)]|[-•*])[ \t]+(\S.*)$", re.MULTILINE)
# What ends an item's name: its explanation after a comma, colon, dash or bracket, or a relative clause.
_NAME_END = re.compile(r"[,:;(.!?]| [-–—] | (?:which|that|who|where|when|if|because|so that|to help|by)\b")
# An inline series follows one of these; its items are split at commas and "and"/"or".
_SERIES_CUE = re.compile(r"\b(?:such as|including|include|includes|are|were|like)\s+(?P<rest>[^.;:!?]+)", re.IGNORECASE)
_RELATIVE = re.compile(r"^(?:which|who|whose|that|where|in which|when|with)\b", re.IGNORECASE)
_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3, "4th": 3, "fifth": 4, "5th": 4,
             "sixth": 5, "6th": 5, "last": -1, "final": -1}
# Nouns a list is made of: "the third option". Any other noun after an ordinal ("the first album",
# "the first time") is no pointer into a list.
_LIST_NOUNS = _words(
    "one ones option options choice choices method methods type types kind kinds step steps item items way ways approach "
    "approaches suggestion suggestions idea ideas thing things point points tip tips example examples alternative "
    "alternatives solution solutions plan plans treatment treatments"
)
_ORDINAL = re.compile(
    r"\b(?:the|that)\s+(?P<ord>first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|sixth|6th|last|final)\b(?:\s+(?P<noun>[a-z]+))?"
    r"|\b(?:number|no\.|#|option|step)\s?(?P<num>[1-9])\b"
    r"|\bthe\s+(?P<pair>latter|former)\b(?:\s+(?P<pnoun>[a-z]+))?",
    re.IGNORECASE,
)
# Verbs and the like that go on after "the second (one)": no tagger, so the common ones by name.
_GOES_ON = _words("work works stay stays make makes cost costs worth hurt hurts help helps mean means need needs last lasts take takes "
                 "affect affects cause causes compare apply")
_OPENER_WORDS = _words("and but or so also what how about then instead too the same for with")
_PLACE_NOUNS = _words("city town village country state capital island region province")
_KIND = re.compile(r"\b(?:this|that|the)\s+(?P<kind>[a-z]+)\b", re.IGNORECASE)
_CALLED = r"\b{kind}s?\s+(?:called|named|known as)\s+(?P<name>[\w-]+(?:\s+[\w-]+){{0,2}}?)(?=[,.;:!?]|\s+(?:which|that|is|was|and|in|to)\b|$)"
_SUCH_AS = re.compile(r"\bsuch as\s+(?P<what>[^,.;:!?]+)")
# A series after a colon: "three kinds of solar panels: monocrystalline, polycrystalline and thin-film".
_COLON_SERIES = re.compile(r"(?:^|(?<=[.!?\n]))(?P<before>[^.!?:\n]*):[ \t]+(?P<rest>[^.;:!?\n]+)")
# A series that opens its sentence and is then said to be something: "A, B and C are the main causes of ...".
_SERIES_SUBJECT = re.compile(r"(?:^|[.!?][ \t]+)(?P<rest>[^.;:!?\n]+?)\s+(?:are|were)\s+(?:the|all|among)\b")
# "kinds of X" before a colon's series: X is what each item names a kind of ("polycrystalline solar panels").
_CLASSIFIER = re.compile(r"\b(?:kinds?|types?|sorts?|forms?|classes|categories|varieties)\s+of\s+(?P<head>(?:[a-z-]+\s+){0,2}[a-z-]+)\s*$",
                         re.IGNORECASE)
# Steps told in prose: "First, cool the skin ... Second, ... Finally, ...": a marker opening a
# sentence (or after an opening phrase: "For a minor burn, first, ..."), the step up to its end.
_STEP = re.compile(r"(?:^|[.!?][ \t]+|,[ \t]+)(?P<mark>first(?:ly)?|second(?:ly)?|third(?:ly)?|fourth(?:ly)?|next|then|finally|lastly)"
                   r",?[ \t]+(?P<step>[^.!?\n]+)", re.IGNORECASE)
# ... or as "The first is X. The second type is Y. The last is called Z."
_THE_NTH = re.compile(r"(?:^|[.!?][ \t]+)the\s+(?P<mark>first|second|third|fourth|fifth|last|final)(?:\s+[a-z]+)?"
                      r"(?:\s+(?:is|are|was|were)\s+(?:called\s+|known as\s+)?|,\s+)(?P<step>[^.!?\n]+)", re.IGNORECASE)
# What a list is announced as being of: "the main causes", "three presidents", "several approaches".
_ANNOUNCED = re.compile(r"\b(?:main|major|most common|common|key|following|these|two|three|four|five|six|several|different|primary|leading)"
                        r"\s+(?:[a-z-]+\s+)?(?P<noun>[a-z]+s)\b", re.IGNORECASE)
_TWO = re.compile(r"\b(?:two|both|pair of)\b", re.IGNORECASE)
# ... what a subject series is said to be: "are the *two* main ways", "are *both* ...".
_TWO_AFTER = re.compile(r"\s+(?:two|both|pair of)\b", re.IGNORECASE)
# Every item of a short list at once: "can I have both?", "which one is cheaper?".
# "both" as a pronoun: at the end, before "of them", or before a function word ("have both at once"),
# not before its noun ("both sexes") or "both A and B".
_BOTH = re.compile(r"\bboth(?:\s+of\s+(?:them|these|those))?(?=\s*(?:[?.!,]|$)|\s+(?P<next>[a-z]+)\b)", re.IGNORECASE)
# "which one ...?", "which of them ...?", "which is cheaper?": not "which is the capital of ...?".
_WHICH_OF = re.compile(r"^\W*(?:(?:and|so|ok|okay),?\s+)?which\s+(?:one|ones|of them|of these|of those|(?:is|are)\s+(?:more|less|better|best|worse|worst|"
                       r"[a-z]+(?:er|est)))\b", re.IGNORECASE)


# A term the answer defines as it introduces it: "aplastic anaemia, a rare condition in which ...",
# "the Peace of Westphalia, a set of treaties ...": the words before the comma, and the kind after.
_APPOSITIVE = re.compile(r"(?:^|(?<=[,.;:!?\n]))(?P<before>[^,.;:!?\n]+),\s+(?:a|an)\s+(?P<mods>(?:[a-z-]+\s+){0,3}?)(?P<kind>[a-z]+)"
                         r"(?=\s+(?:in which|of|that|which|where|whose|caused|used|made|with|from|signed|named)\b|[,.;])")
# A bare demonstrative that stands for a thing ("what causes that?"), not one before its noun.
_BARE_DEMONSTRATIVE = re.compile(r"\b(?P<p>this|that)\b(?=\s*(?:[?.!,]|$|\s+(?:is|was|be|been|mean|means|happen|happens|"
                                 r"for|in|at|to|with|on|from|and|or|when|if)\b))", re.IGNORECASE)
# What a bare "that" asks of a statement, not a thing: "Why is that?", "Is that true?".
_OF_A_STATEMENT = _words("true right correct wrong possible enough okay ok sure so really certain case else happen happens happened "
                         "occur occurred")
# "after that", "besides that": the events or words the answer told, not a term of it.
_AFTER_THAT = re.compile(r"\b(?:after|before|since|besides|than|from|beyond|despite|like|until|till)\s+(?:all\s+)?(?:this|that)\b", re.IGNORECASE)
# Words of degree before an adjective: "very popular, a fact that ..." is a predicate, no term.
_DEGREE = _words("very so too quite rather more most less least really extremely fairly highly")
_NAME_LINK = frozenset(["of", "the", "de", "du", "von", "van"])
# Words before a defined term that are no part of it ("is often onychomycosis, a ...").
_BEFORE_TERM = _words("often usually probably possibly mostly sometimes also still always just only mainly typically commonly "
                      "called named known likely perhaps maybe")


def enumeration(answer: str) -> tuple[str, ...]:
    """The names of the items of the one list `answer` holds: its numbered or bulleted lines (one
    run of them), else its one inline series of three or more items (two after "are"/"include"
    with a relative clause each: "are the 401(k), which ..., and the IRA, which ..."); () when it
    holds none, or two series that could each be meant."""
    text = analysed_part(answer)
    lines = list(_LINE_ITEM.finditer(text))
    if len(lines) >= 2:
        between = [text[a.end() : b.start()] for a, b in itertools.pairwise(lines)]
        if any(gap.strip() for gap in between):
            return ()  # two runs of lines: which list is meant is not clear
        return tuple(_item_name(m.group(1)) for m in lines)
    steps = _steps(text)
    if steps:
        return steps
    series = [items for m in _SERIES_CUE.finditer(text) if len(items := _series(m.group("rest"))) >= 2 and not _predicate_series(m.group(0), items)]
    # Two items are a list when the sentence says so: "A and B are the two main ways ...".
    series += [(_lower_first(items[0]), *items[1:]) for m in _SERIES_SUBJECT.finditer(text)
               if len(items := _series(m.group("rest"), pair=_TWO_AFTER.match(text, m.end()) is not None)) >= 2]
    for m in _COLON_SERIES.finditer(text):
        kind = _CLASSIFIER.search(m.group("before"))
        # Two items are a list when the words before the colon say so ("two kinds of ...:").
        if len(items := _series(m.group("rest"), pair=kind is not None or _TWO.search(m.group("before")) is not None)) >= 2:
            series.append(tuple(_of_kind(i, kind.group("head")) for i in items) if kind else items)
    series = list(dict.fromkeys(series))
    return series[0] if len(series) == 1 else ()


def _predicate_series(said: str, items: tuple[str, ...]) -> bool:
    """Whether a series after "are"/"were" says what things are or do, not which things there are:
    its first item opens on a function or degree word, an adverb, a participle or an adjective
    ("These panels are much slower, ...", "are porous and need sealing", "are soaked, cooked
    until soft and ..."), where a list of things opens on a noun ("are smoking, obesity and ...")."""
    if said.split()[0].lower() not in {"are", "were"}:
        return False
    first = items[0].split()[0].lower()
    return (first in FUNCTION and first not in DET) or first in _DEGREE or first in PARTICIPLES or first.endswith(("ly", "ed", *ADJECTIVE_ENDINGS))


def _steps(text: str) -> tuple[str, ...]:
    """The steps of an answer that tells them in prose ("First, ... Second, ... Finally, ..."):
    two or more, the first marked as first; () otherwise."""
    for told in (_STEP, _THE_NTH):
        marks = [(m.group("mark").lower(), m.group("step")) for m in told.finditer(text)]
        if len(marks) >= 2 and marks[0][0].startswith("first"):
            return tuple(_gerund(_item_name(step)) for _mark, step in marks)
    return ()


# What follows an imperative's verb: its object's determiner ("cool *the* skin", "take *your* pills").
_OBJECT_START = _words("the a an your his her their its it them this that these those any some off out up")


def _gerund(step: str) -> str:
    """A step told as a command, as the noun phrase a question puts it in: "cool the skin ..." ->
    "cooling the skin ..." ("Is butter better than cooling the skin ...?"), never the bare
    command (a verb is no referent); a step that does not open on a verb and its object stays."""
    words = step.split()
    if len(words) < 2 or not words[0].isalpha() or not words[0].islower() or words[0] in FUNCTION or words[1].lower() not in _OBJECT_START:
        return step
    verb = words[0]
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        verb = verb[:-1]
    elif len(verb) <= 4 and re.fullmatch(r"[^aeiou]*[aeiou][bdgmnpt]", verb):
        verb += verb[-1]  # "cut" -> "cutting", "stop" -> "stopping"
    return " ".join([verb + "ing", *words[1:]])


def _of_kind(item: str, head: str) -> str:
    """An item of "kinds of X" with X after it, when the item is a word or two that does not
    name X already: "polycrystalline" -> "polycrystalline solar panels"."""
    last = head.split()[-1].lower()
    return item if len(item.split()) > 2 or item.lower().endswith((last, last.rstrip("s"))) else f"{item} {head}"


def _lower_first(item: str) -> str:
    """A series' first item less the capital its sentence gave it ("Rising sea temperatures"; not
    "London", which may be a name)."""
    words = item.split()
    if len(words) > 1 and words[0][1:].islower() and words[1].islower():
        return item[0].lower() + item[1:]
    return item


def _item_name(line: str) -> str:
    """An item's name: its words before its explanation, when they are few enough to be a name
    (else empty: the item is there, but no name of it can be searched)."""
    cut = _NAME_END.search(line)
    name = (line[: cut.start()] if cut else line).strip()
    words = name.split()
    if not words or len(words) > ITEM_WORDS:
        return ""
    if words[0][1:].islower() and (len(words) == 1 or words[1].islower()):  # "Beta blockers": capitalised as a line starts
        name = name[0].lower() + name[1:]
    return name


def _series(rest: str, *, pair: bool = False) -> tuple[str, ...]:
    """The items of an inline series: the parts between commas and "and"/"or", less relative
    clauses ("the 401(k), which an employer offers, and the IRA"); () when a part is too long to
    be an item's name or the parts are not a series."""
    parts = [p.strip() for p in rest.split(",")]
    items: list[str] = []
    joined = False
    for n, part in enumerate(parts):
        if not part or _RELATIVE.match(part):
            continue
        starts = re.match(r"^(?:and|or)\s+", part)
        joined |= starts is not None
        part = part[starts.end() :] if starts else part
        if n == len(parts) - 1 or n == 0:
            split = re.split(r"\s+(?:and|or)\s+", part)
            joined |= len(split) > 1
            items.extend(s.strip() for s in split)
        else:
            items.append(part)
    if not joined or any(len(i.split()) > ITEM_WORDS // 2 + 1 or not i for i in items):
        return ()
    if len(items) == 2 and not pair and not any(_RELATIVE.match(p.strip()) for p in parts):
        return ()  # "A and B" alone is a phrase as often as a list ("salt and pepper")
    return tuple(items)


def list_pointer(message: str, items: Sequence[str], *, heads: frozenset[str] = frozenset()) -> tuple[int, int, str] | None:
    """(start, end, item) of the one pointer into `items` the message holds ("the third one",
    "the last option", "number 2", "the latter" of two), or None: no pointer, two of them, a
    position past the list, or an ordinal with a noun no list is made of ("the first album").
    `heads`: the stems of the nouns the answer announced its list as ("the second cause" after
    "... are the main causes")."""
    found = []
    for m in _ORDINAL.finditer(message):
        if m.group("pair"):
            # "the latter" points back whatever follows it ("the latter grown", "the latter group").
            noun = (m.group("pnoun") or "").lower()
            if len(items) != 2:
                return None
            found.append((m.start(), m.end("pnoun") if noun in _LIST_NOUNS else m.end("pair"), 0 if m.group("pair").lower() == "former" else 1))
            continue
        if m.group("num"):
            found.append((m.start(), m.end(), int(m.group("num")) - 1))
            continue
        noun = (m.group("noun") or "").lower()
        end = m.end("ord")
        if noun in _LIST_NOUNS or (noun and set(analyze(noun)) & heads and (not _verbish(noun) or _ends_phrase(message, m.end("noun")))):
            end = m.end("noun")
        elif noun and not _verbish(noun):
            return None  # "the first album": an ordinal of its own noun
        found.append((m.start(), end, _ORDINALS[m.group("ord").lower()]))
    if len(found) != 1:
        return None
    start, end, at = found[0]
    if at >= len(items) or not items[at]:
        return None
    return start, end, items[at]


def _ends_phrase(message: str, at: int) -> bool:
    """Whether the words before `at` end a noun phrase: the message ends, or a preposition or
    punctuation follows ("stop the second cause?", not "does the second cause cancer?")."""
    return re.match(r"\s*(?:[?.!,;]|$|(?:of|for|in|on|to|with|and|or|is|was|be)\b)", message[at:]) is not None


def _verbish(word: str) -> bool:
    """A word after "the second" that goes on with the sentence, not a noun the ordinal modifies:
    "does the second *stay*", "can the latter *be* reversed", "is the last *worth* it"."""
    return word in FUNCTION or word in _GOES_ON


def answer_referent(message: str, earlier: Sequence[Turn], tracker: Tracker, cues: Sequence[str], form: Standalone, *,
                    previous: str | None = None) -> Standalone | None:
    """The form of `message` after the `earlier` turns when it points at something only an answer
    names (see the module's docstring); None when it does not, or the evidence is not clear, and
    `form` (the tracker's) stands."""
    pointed = listed_item(message, earlier)
    if pointed is not None:
        start, end, item, items = pointed
        # "number 2" keeps its number beside the item: a number the user typed is never dropped (the guard).
        numbered = message[start:end] if any(c.isdigit() for c in message[start:end]) else ""
        said = message[:start] + item + (f" ({numbered})" if numbered else "") + message[end:]
        referent = _referent(item)
        if previous and _only_opener(message[:start] + message[end:]):
            # "What about the third?": the previous question about the item, in place of the item it asked about.
            other = next((hit for i in items if i and i != item and (hit := re.search(rf"\b{re.escape(i)}\b", previous, re.IGNORECASE))), None)
            if other is not None:
                return Standalone(previous[: other.start()] + item + previous[other.end() :], "ellipsis", (referent,),
                                  f"the previous question about the list's {item!r} (in place of {other.group(0)!r})")
            swapped = resolve(said, tracker, cues, previous=previous)
            if swapped.method == "ellipsis":
                return replace(swapped, referents=(referent, *swapped.referents), why=f"list item {item!r}; {swapped.why}")
        return Standalone(said, "placed", (referent,), f"a pointer into the answer's list resolved to {item!r}")
    answer = earlier[-1].text if earlier and earlier[-1].role == "assistant" else ""
    if not answer:
        return None
    every = _every_item(message, earlier, tracker)
    if every is not None:
        return every
    # A pronoun the answer's people take, else one its predicate's slot gives a phrase.
    pronoun = answer_persons(message, answer, tracker, form) or answer_group(message, answer, form) or answer_predicate(message, earlier, form)
    if pronoun is not None:
        said, referents, why = pronoun
        rest = resolve(said, tracker, cues, previous=previous)
        if rest.method == "placed":  # another pronoun of the message ("it"), resolved as before
            return replace(rest, referents=(*referents, *rest.referents), why=f"{why}; {rest.why}")
        return Standalone(said, "placed", referents, why)
    asked = {w for t in earlier if t.role == "user" for w in analyze(t.text)}
    found = _introduced_kind(message, answer, tracker, asked) or _defined_term(message, answer, asked)
    # A compound names the message's own phrase more fully, a description, not the thing the talk
    # is about: the subject the tracker's form gives beside it stays.
    described = found is None
    found = found or _compound(message, earlier, asked)
    if found is None:
        topic = place_answer_topic(message, answer, asked, cues)
        if topic is None:
            return None
        said, referent = topic
        rest = resolve(said, tracker, cues, previous=previous)
        if rest.method == "placed":  # another pronoun of the message, resolved as before
            return replace(rest, referents=(referent, *rest.referents), why=f"'it' is the answer's subject {referent.text!r}; {rest.why}")
        return Standalone(said, "placed", (referent,), f"'it' is the answer's subject {referent.text!r}, which its next sentence carries on")
    start, end, words, referent, why = found
    said = message[:start] + words + message[end:]
    rest = resolve(said, tracker, cues, previous=previous)
    if rest.method == "placed":  # another pronoun of the message, resolved as before
        return replace(rest, referents=(referent, *rest.referents), why=f"{why}; {rest.why}")
    if described and rest.method == "appended" and rest.text.startswith(said):
        # The conversation's subject after the named phrase, as the tracker gives it ("Where do I get
        # the sequestered iron? blueberries"); carried is only the phrase: the subject is not said again.
        return Standalone(rest.text, "placed", (referent,), f"{why}; {rest.why}")
    return Standalone(said, "placed", (referent,), why)


def _every_item(message: str, earlier: Sequence[Turn], tracker: Tracker) -> Standalone | None:
    """"both" as both items of the answer's list of two ("Can I have both?" -> "Can I have both
    the 401(k) and the IRA?"), and "which one ...?" as a comparison naming each item of a list of
    two to four, when the user's own turn named no two things to choose between."""
    both, which = _BOTH.search(message), _WHICH_OF.match(message)
    if both is not None and both.group("next") and (both.group("next").lower() not in FUNCTION or both.group("next").lower() in {"the", "a", "an"}):
        both = None
    if (both is None and which is None) or len(tracker.latest_names()) >= 2:
        return None
    items = latest_list(earlier)
    if not items or not all(items):
        return None
    referents = tuple(_referent(i) for i in items)
    if both is not None and len(items) == 2:
        said = f"{message[: both.start()]}both {items[0]} and {items[1]}{message[both.end() :]}"
        return Standalone(said, "placed", referents, f"'both' is the answer's two items, {items[0]!r} and {items[1]!r}")
    if which is not None and 2 <= len(items) <= 4:
        return Standalone(f"{message.rstrip()} {' or '.join(items)}", "appended", referents,
                          f"'which' between the answer's items: a comparison naming each of {', '.join(map(repr, items))}")
    return None


def _only_opener(rest: str) -> bool:
    """Whether the message less its pointer is an elliptical opener and nothing else ("What about
    ...?", "And ...?"): a question of its own ("And is the third one good for a cold?") is not."""
    words = re.findall(r"[a-z']+", rest.lower())
    return bool(words) and set(words) <= _OPENER_WORDS


def listed_item(message: str, earlier: Sequence[Turn]) -> tuple[int, int, str, tuple[str, ...]] | None:
    """`list_pointer` into the latest of the last `LIST_ANSWERS` answers that holds a list ("is the
    last one worth it?" after a list, a question and its answer), with the list's items."""
    if _ORDINAL.search(message) is None:  # most messages: no answer is parsed (the gate asks on every message)
        return None
    answer, items = _latest_listing(earlier)
    pointed = list_pointer(message, items, heads=_announced(answer)) if items else None
    return None if pointed is None else (*pointed, items)


def latest_list(earlier: Sequence[Turn]) -> tuple[str, ...]:
    """The items of the latest of the last `LIST_ANSWERS` answers that holds a list; () for none."""
    return _latest_listing(earlier)[1]


def _announced(answer: str) -> frozenset[str]:
    """The stems of the nouns an answer announces a list of ("the main causes", "the first three
    presidents"): an ordinal with one of them points into its list ("the second cause")."""
    return frozenset(w for m in _ANNOUNCED.finditer(analysed_part(answer)) for w in analyze(m.group("noun")))


def _latest_listing(earlier: Sequence[Turn]) -> tuple[str, tuple[str, ...]]:
    answers = [t.text for t in earlier if t.role == "assistant"][-LIST_ANSWERS:]
    return next(((answer, items) for answer in reversed(answers) if (items := enumeration(answer))), ("", ()))


def _referent(text: str) -> Referent:
    named = any(w[:1].isupper() for w in text.split())
    return Referent(text, "name" if named else "phrase", tuple(analyze(text)) or (text.lower(),))


# Where a pointer is in the message, the words that stand in for it, its referent, and why.
_Found = tuple[int, int, str, Referent, str]


def _introduced_kind(message: str, answer: str, tracker: Tracker, asked: set[str]) -> _Found | None:
    """"this reaction" after "... a reaction called saponification"; "that drug" after the
    answer's one "such as chlorthalidone"; "the city" after the answer's first place. Only for a
    noun no earlier user turn said (`asked`: their words' stems; else it is the user's own thing)."""
    text = analysed_part(answer, ANSWER_CHARS)
    for m in _KIND.finditer(message):
        kind, det = m.group("kind").lower(), message[m.start() : m.start("kind")].strip().lower()
        stems = set(analyze(kind))
        if not stems or stems & asked:
            continue
        found: str | None = None
        if kind in _PLACE_NOUNS:
            if any(r.place for r in tracker.referents.values()):
                continue
            place = PLACE_NAME.search(text)
            found = place.group("name") if place else None
        elif len(defined := {term for term, said in _defined(text) if said in (kind, kind.rstrip("s"))}) == 1:
            found = defined.pop()  # "carpal tunnel syndrome, a condition in which ..." -> "this condition", "the condition"
        elif det in {"this", "that"}:
            called = re.search(_CALLED.format(kind=re.escape(kind)), text, re.IGNORECASE)
            if called is not None:
                found = called.group("name")
            else:
                such = [s.group("what").strip() for s in _SUCH_AS.finditer(text)]
                if len(such) == 1 and not re.search(r"\s(?:and|or)\s", such[0]) and len(such[0].split()) <= 3:
                    found = such[0]
        else:  # "the treaty" after "the Treaty of Paris"
            found = _name_of_kind(kind, text)
        if found:
            referent = replace(_referent(found), place=kind in _PLACE_NOUNS)
            return m.start(), m.end(), found, referent, f"{m.group(0)!r} is {found!r}, which only the answer names"
    return None


def _compound(message: str, earlier: Sequence[Turn], asked: set[str]) -> _Found | None:
    """"the lagoon" as the one compound an answer builds on it ("the Jokulsarlon glacier lagoon"): `answer_heads`."""
    found = answer_head(message, [t.text for t in earlier if t.role == "assistant"], asked)
    if found is None:
        return None
    start, end, words, compound, why = found
    # A description, not a name, though it may hold one: a later "it" prefers the user's subject.
    return start, end, words, Referent(compound, "phrase", tuple(analyze(compound)), definite=True), why


def _name_of_kind(kind: str, text: str) -> str | None:
    """The one name of two words or more in `text` built on `kind` ("the Treaty of Paris" for
    "treaty", "World War II" for "war"), with the "the" the text gives it; None for none or two."""
    pattern = rf"\b(?P<name>(?:[A-Z][\w'-]+\s+)*{re.escape(kind.capitalize())}(?:\s+(?:of|de)\s+(?:the\s+)?[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*)?)\b"
    names = {("the " if text[max(n.start() - 4, 0) : n.start()].lower() == "the " else "") + n.group("name")
             for n in re.finditer(pattern, text) if " " in n.group("name")}
    return names.pop() if len(names) == 1 else None


def _defined(text: str) -> list[tuple[str, str]]:
    """(term, kind) for each term `text` defines as it introduces it ("aplastic anaemia, a rare
    condition in which ..."): the noun phrase that ends before the comma -- a name, with its "of"
    ("the Peace of Westphalia"), or up to four content words ("carpal tunnel syndrome")."""
    out: list[tuple[str, str]] = []
    for m in _APPOSITIVE.finditer(text):
        words = m.group("before").split()
        kept: list[str] = []
        while words and len(kept) < 4:
            w = words[-1]
            link = w.lower() in _NAME_LINK and kept and kept[0][:1].isupper() and len(words) > 1 and words[-2][:1].isupper()
            adverb = w.lower() in _BEFORE_TERM or (w.islower() and len(w) > 4 and w.endswith("ly"))
            if not link and (w.lower() in FUNCTION or adverb or not re.fullmatch(r"[\w'-]+", w)):
                break
            kept.insert(0, words.pop())
        # A predicate is no term: "He was traded, a decision that ..." ("traded" after an auxiliary
        # or a subject pronoun), a year ("in 1975, a move that ..."), an adverb.
        before = words[-1].lower() if words else ""
        predicate = before in PERSONAL or before in _DEGREE or (before in AUX and len(kept) == 1 and _verb_or_adjective(kept[0].lower()))
        if kept and kept[0].lower() not in _NAME_LINK and not predicate and any(c.isalpha() for c in kept[-1]):
            out.append((" ".join(kept), m.group("kind").lower()))
    return out


def _verb_or_adjective(word: str) -> bool:
    """A word after "was" that is no noun, without a tagger: a participle ("traded", "taken",
    "playing") or an adjective's ending ("popular", "famous"); "may be eczema" keeps its noun."""
    return word.endswith(("ed", "en", "ing", "ar", *ADJECTIVE_ENDINGS)) or word in PARTICIPLES


def _defined_term(message: str, answer: str, asked: set[str]) -> _Found | None:
    """A bare "that"/"this" of the message ("what causes that?") as the one term the answer
    defined as it introduced it ("... aplastic anaemia, a rare condition in which ..."), when no
    earlier user turn says it: what a reply points at when the answer brought in one new thing."""
    pointer = _BARE_DEMONSTRATIVE.search(message)
    asks = {w for w in re.findall(r"[a-z']+", message.lower()) if w not in FUNCTION}
    if pointer is None or not asks or asks <= _OF_A_STATEMENT or _AFTER_THAT.search(message):
        return None  # "Why is that?", "Is that true?", "What happened after that?": of what the answer said
    terms = {term for term, _kind in _defined(analysed_part(answer, ANSWER_CHARS)) if not set(analyze(term)) <= asked}
    if len(terms) != 1:
        return None
    term = terms.pop()
    return pointer.start(), pointer.end(), term, _referent(term), f"{pointer.group(0)!r} is {term!r}, which the answer defined as it brought it in"

