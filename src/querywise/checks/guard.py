"""Rewrite guard: nothing lost, nothing invented.

A standalone rewrite must keep every product name, identifier and number of the message, and may
add only what the message or the history said. The guard extracts those terms from each text and
compares them; a rewrite that fails is not used (the pipeline falls back and traces why).

Terms of a text, first come first served (a span claimed once is not read again):

1. identifiers, by configurable patterns, reported upper case with a hyphen ("hc3471" -> "HC-3471");
2. names: catalog mentions, longest first, reported as written and compared by the entities
   they name; without a catalog, capitalised sequences of two or more words with a capital first
   ("Solace 7 Pro", "South Pond Nature Area"), compared by their words;
3. numbers, reported as written with an attached unit ("12-month", "22mm") and compared by value.

Longest first matters both ways: "Solace 7 Pro" does not contain "Solace 7", so a rewrite that
says "Solace 7 Pro" after a history that said "Solace 7" has invented it.

Time is linear in the texts (taken spans, identifiers, names and numbers are looked up in sets
and indexes, never by rescanning), and bounded: a rewrite longer than `max_chars` is not read
at all but rejected (an LLM answer of that size is no standalone question), and the history is
read back to `text.HISTORY_ANALYSIS_CHARS` characters (a term only older turns said counts as
invented).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Literal

from querywise.catalog import Catalog, Mention
from querywise.conversation import Turn, texts
from querywise.text import SpanSet, analysed_history, analyze

__all__ = ["DEFAULT_IDENTIFIER_PATTERNS", "DEFAULT_MAX_REWRITE_CHARS", "GuardResult", "Term", "check_rewrite", "rewrite_limit", "terms"]

# Two or more letters, an optional hyphen, three or more digits: part numbers and SKUs in any case.
DEFAULT_IDENTIFIER_PATTERNS: tuple[str, ...] = (r"\b[A-Za-z]{2,}-?\d{3,}\b",)

Kind = Literal["identifier", "name", "number"]
# The longest rewrite the guard reads; `[limits] max_rewrite_chars` in a deployment.
DEFAULT_MAX_REWRITE_CHARS = 10_000
_REWRITE_LIMIT: ContextVar[int] = ContextVar("querywise_rewrite_limit", default=DEFAULT_MAX_REWRITE_CHARS)


def rewrite_limit(max_chars: int) -> Token[int]:
    """Make `max_chars` the limit of every `check_rewrite` in this context that names none.

    The planner sets its deployment's `[limits] max_rewrite_chars` at the start of each plan, so
    the guard checks of that plan (the deterministic rewrite, the LLM's answer) all keep it
    without each caller passing it along (a thread or an asyncio task has its own context)."""
    return _REWRITE_LIMIT.set(max_chars)


@dataclass(frozen=True)
class Term:
    """One protected term of a text: what it reports (`text`) and how it compares (`key`).

    Catalog names compare by `entities` (catalog ids); other names by `key`, their word stems.
    """

    kind: Kind
    text: str
    key: tuple[str, ...]
    entities: frozenset[str] = frozenset()
    # Other keys of the same term as people write it: a name without a word that only starts the
    # sentence ("Besides Roger Clemens"), with the lower-case word after it ("English Civil war");
    # a number's other spellings ("8k" / "8000", "70s" / "1970s": `_spellings`).
    variants: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class GuardResult:
    """Whether a rewrite keeps the message's terms and adds none that nobody said.

    >>> check_rewrite("is hc3471 in stock", "Are Solace 7 Pro cushions in stock?", ["Solace 7 Pro parts"])
    GuardResult(ok=False, lost=('HC-3471',), invented=())
    """

    ok: bool
    lost: tuple[str, ...]
    invented: tuple[str, ...]
    too_long: tuple[int, int] | None = field(default=None, repr=False)  # (length, limit) of a rewrite not read

    @property
    def reason(self) -> str:
        if self.ok:
            return "every name, identifier and number kept; nothing added"
        if self.too_long is not None:
            return f"rewrite of {self.too_long[0]:,} characters is longer than the guard reads ({self.too_long[1]:,}, [limits] max_rewrite_chars)"
        parts = []
        if self.lost:
            parts.append("lost " + ", ".join(repr(t) for t in self.lost))
        if self.invented:
            parts.append("invented " + ", ".join(repr(t) for t in self.invented))
        return "; ".join(parts)


# Words that start a sentence with a capital only because they start it: never part of a name.
_SENTENCE_WORDS = frozenset(
    ["what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was", "were", "be", "do", "does", "did", "can", "could", "will", "would", "should", "shall", "may", "might", "must", "has", "have", "had", "the", "a", "an", "this", "that", "these", "those", "and", "but", "or", "if", "so", "in", "on", "at", "for", "to", "of", "with", "from", "by", "about", "tell", "describe", "explain", "compare", "show", "give", "list", "find", "i", "my", "our", "your", "please", "any", "some", "there", "it", "its", "they", "their", "yes", "no", "not", "ok", "okay", "sure", "thanks", "thank", "hi", "hello", "hey", "we", "he", "she", "you"]
)
_WORD = re.compile(r"[^\W_]+(?:[.'\u2019][^\W_]+)*\.?|[^\w\s]|_")
_ABBREVIATION = re.compile(r"\w\.\w")
# Dotted words that end no sentence: an initial ("Joseph S. Cook") and common abbreviations.
_INITIAL = re.compile(r"[A-Z]\.")
_ABBREVIATIONS = frozenset(
    ["mr.", "mrs.", "ms.", "dr.", "st.", "jr.", "sr.", "prof.", "gen.", "col.", "lt.", "sgt.", "capt.", "rev.", "hon.", "gov.", "sen.", "rep.", "pres.", "mt.", "ft.", "ave.", "vs.", "no.", "vol.", "fig.", "inc.", "co.", "corp.", "ltd.", "bros.", "approx.", "dept.", "univ.", "etc.", "e.g.", "i.e."]
)
# The legal or club form after a name ("Leeds United F.C.", "Apple Inc."): the name without it
# names the same club or company, so a run may end before it.
_NAME_SUFFIXES = frozenset(["fc", "afc", "cf", "sc", "inc", "ltd", "co", "corp", "plc", "llc", "llp", "gmbh", "ag", "sa", "nv", "bv"])
# Number words, each to the digits a text may write instead ("first" / "1st", "two" / "2").
_NUMBER_WORDS = {
    w: str(n)
    for n, ws in enumerate(
        [("zero",), ("one", "first"), ("two", "second"), ("three", "third"), ("four", "fourth"), ("five", "fifth"), ("six", "sixth"), ("seven", "seventh"), ("eight", "eighth"), ("nine", "ninth"), ("ten", "tenth"), ("eleven", "eleventh"), ("twelve", "twelfth"), ("thirteen", "thirteenth"), ("fourteen", "fourteenth"), ("fifteen", "fifteenth"), ("sixteen", "sixteenth"), ("seventeen", "seventeenth"), ("eighteen", "eighteenth"), ("nineteen", "nineteenth"), ("twenty", "twentieth")]
    )
    for w in ws
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90", "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000"}
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_JOIN = re.compile(r"[ \t-]?")
_POSSESSIVE = re.compile(r"[^\W\d_]['\u2019]s?$")  # any letter's: "José's", "Dvořák's"
# A decade in full ("1970s") is the one people shorten ("70s", "'70s"), and the other way round.
_DECADE = re.compile(r"(?:1[89]|20)(\d0)s")
_SHORT_DECADE = re.compile(r"\d0s")
_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_NUMBER = re.compile(r"(?<![\w.])([A-Za-z]*\d+(?:[.,:/]\d+)*)((?:%|[A-Za-z]+)?(?:-[A-Za-z]+)?)(?![\w])")


class _Word:
    """One token of a text; its stem is worked out when first asked (most never are)."""

    __slots__ = ("end", "initial", "start", "text")

    def __init__(self, text: str, start: int, end: int, initial: bool) -> None:
        self.text, self.start, self.end, self.initial = text, start, end, initial

    @property
    def stem(self) -> str:
        return _stem(self.text) if self.text[0].isalnum() else self.text

    @property
    def name_like(self) -> bool:
        """Could be part of a name: a capital (not explained by starting the sentence), or a digit."""
        return _name_like(self.text, self.initial)


@lru_cache(maxsize=1 << 16)
def _name_like(text: str, initial: bool) -> bool:
    if not text[0].isalnum() or re.split(r"['\u2019]", text)[0] == "I":
        return False  # "I", "I'm": capitalised by spelling rules
    if any(c.isdigit() for c in text):
        return True
    if not text[0].isupper():
        return False
    # "What's", "Isn't", "Wasn't" start a sentence as its first word does: never a name's first word.
    lower = text.lower().replace("\u2019", "'")
    return not (initial and (lower in _SENTENCE_WORDS or lower.split("'")[0] in _SENTENCE_WORDS or lower.endswith("n't")))


@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    # Plurals and possessives are not losses: "Irish Wolfhounds" keeps "Irish Wolfhound".
    bare = re.sub(r"['\u2019]s?$", "", word.lower()).replace(".", "")
    stems = analyze(bare, stopwords=False) if bare.isalpha() and len(bare) > 1 else []
    return stems[0] if stems else bare


def _words(text: str) -> list[_Word]:
    out: list[_Word] = []
    initial = True
    for m in _WORD.finditer(text):
        tok = m.group(0)
        out.append(_Word(tok, m.start(), m.end(), initial))
        # "D.C.", "S." of "Joseph S. Cook" and "Dr." end no sentence.
        initial = _ends_sentence(tok) if tok[0].isalnum() else (tok in ".?!" or (initial and tok in "\"'("))
    return out


@lru_cache(maxsize=1 << 16)
def _ends_sentence(token: str) -> bool:
    return token.endswith(".") and not (_ABBREVIATION.search(token) or _INITIAL.fullmatch(token) or token.lower() in _ABBREVIATIONS)


def _possessive(word: _Word) -> bool:
    return _POSSESSIVE.search(word.text) is not None


def _legal_form(word: _Word | None) -> bool:
    return word is not None and word.text.replace(".", "").lower() in _NAME_SUFFIXES and word.text[:1].isupper()


@lru_cache(maxsize=1 << 12)
def _name_stems(name: str) -> tuple[str, ...]:
    return tuple(w.stem for w in _words(name))


@lru_cache(maxsize=1 << 16)
def _identifier_key(raw: str) -> str:
    compact = re.sub(r"[\s_-]+", "", raw.upper())
    return re.sub(r"(?<=[A-Z])(?=\d)", "-", compact, count=1)


def _overlapping(mentions: Sequence[Mention], ends: list[int], span: tuple[int, int]) -> Iterable[Mention]:
    """The mentions (in reading order, not overlapping each other) that overlap `span`."""
    k = bisect.bisect_right(ends, span[0])
    while k < len(mentions) and mentions[k].start < span[1]:
        if not (span[1] <= mentions[k].start or span[0] >= mentions[k].end):
            yield mentions[k]
        k += 1


def _capitalised_names(text: str, claimed: SpanSet) -> list[Term]:
    """Runs of two or more name-like words, adjacent but for a space or a hyphen, that start
    with a capitalised word."""
    all_words = _words(text)
    words = [w for w in all_words if claimed.free(w.start, w.end)]
    after = {id(w): nxt for w, nxt in itertools.pairwise(all_words)}
    runs: list[list[_Word]] = []
    for w in words:
        joined = runs and runs[-1] and _JOIN.fullmatch(text, runs[-1][-1].end, w.start) is not None
        # A name does not run across a sentence end ("... in NY. Yes, I do."): a word that
        # starts a sentence starts a new run.
        if w.name_like and joined and runs[-1][-1].name_like and not w.initial:
            runs[-1].append(w)
        else:
            runs.append([w])
    out = []
    for run in runs:
        run = [w for w in run if w.name_like]
        if len(run) >= 2 and run[0].text[0].isupper():
            key = tuple(w.stem for w in run)
            variants = []
            if run[0].initial:
                variants.append(key[1:])  # "Besides Roger Clemens": "Besides" may only start the sentence
            nxt = after.get(id(run[-1]))
            if nxt is not None and nxt.text.isalpha() and nxt.text.islower() and nxt.start - run[-1].end == 1 and not run[-1].text.endswith("."):
                variants.append((*key, nxt.stem))  # "English Civil war" for "English Civil War"
            out.append(Term("name", text[run[0].start : run[-1].end], key, variants=tuple(variants)))
            claimed.add(run[0].start, run[-1].end)
    return out


def terms(
    text: str,
    *,
    catalog: Catalog | None = None,
    identifier_patterns: Sequence[str] = DEFAULT_IDENTIFIER_PATTERNS,
) -> tuple[Term, ...]:
    """The protected terms of `text`, in the order identifiers, names, numbers.

    >>> [t.text for t in terms("Does the Solace 7 Pro last 40 hours? Part hc3471")]
    ['HC-3471', 'Solace 7 Pro', '40']
    """
    claimed = SpanSet()
    out: list[Term] = []
    mentions = catalog.mentions(text) if catalog is not None else []
    ends = [x.end for x in mentions]
    for pattern in identifier_patterns:
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            if claimed.free(*m.span()):
                key = _identifier_key(m.group(0))
                # A catalog part number also names its product, so a rewrite may name it instead.
                named = frozenset(e.id for x in _overlapping(mentions, ends, m.span()) for e in x.entities)
                out.append(Term("identifier", key, (key,), named))
                claimed.add(*m.span())
    if catalog is not None:
        for mention in mentions:
            if claimed.free(mention.start, mention.end):
                ids = frozenset(e.id for e in mention.entities)
                out.append(Term("name", mention.text, tuple(w.stem for w in _words(mention.text)), ids))
                claimed.add(mention.start, mention.end)
    else:
        out.extend(_capitalised_names(text, claimed))
    for m in _NUMBER.finditer(text):
        if claimed.free(*m.span()):
            value = m.group(1).lower().replace(",", "")
            out.append(Term("number", m.group(0), (value,), variants=tuple((v,) for v in _spellings(value, m.group(2)))))
    return tuple(out)


@lru_cache(maxsize=1 << 12)
def _spellings(value: str, unit: str) -> tuple[str, ...]:
    """Other ways people write the same number: "8k" is "8,000"; "70s" and "1970s" are one decade
    (a short decade may be the 1900s' or the 2000s'), kept apart from the plain number 70."""
    if unit.lower() == "k" and re.fullmatch(r"\d+(?:\.\d+)?", value):
        thousands = float(value) * 1000
        return (str(int(thousands)) if thousands.is_integer() else str(thousands),)
    if unit == "s" and _DECADE.fullmatch(value + unit):
        return (f"decade:{value}",)
    if unit == "s" and _SHORT_DECADE.fullmatch(value + unit):
        return (f"decade:19{value}", f"decade:20{value}")
    return ()


def _numbers_in(text: str) -> set[str]:
    """Every number of the text, even inside a name or an identifier, and the number words
    ("first" is "1st", "two" is "2"), each also as people write it otherwise (`_spellings`): for a
    number, being said at all is enough."""
    words = {_NUMBER_WORDS[m.group(0).lower()] for m in _NUMBER_WORD.finditer(text)}
    numbers = set()
    for m in _NUMBER.finditer(text):
        value = m.group(1).lower().replace(",", "")
        numbers |= {value, *_spellings(value, m.group(2))}
    return numbers | set(_DIGITS.findall(text)) | words


class _Runs:
    """Which runs of word stems occur in some texts, ending where no further name word follows
    ("Solace 7" is not in "Solace 7 Pro"): a suffix automaton over the texts' stems, each state
    marked when one of its occurrences ends at such a place. Built in linear time; a question
    costs the length of the run asked about."""

    def __init__(self, texts: Sequence[list[_Word]]) -> None:
        self.next: list[dict[object, int]] = [{}]
        self.link, self.length, self.ends_free = [-1], [0], [False]
        self.last = 0
        for n, words in enumerate(texts):
            if n:
                self._add(("text", n))  # a separator no stem equals: no run crosses texts
            for i, w in enumerate(words):
                self._add(w.stem)
                after = words[i + 1] if i + 1 < len(words) else None
                # A possessive ends a name: "Shirley Collins's Anthems in Eden" said "Shirley Collins".
                if not (after is not None and after.name_like and not after.initial and after.start - w.end <= 1) or _legal_form(after) or _possessive(w):
                    self.ends_free[self.last] = True
        for v in sorted(range(1, len(self.length)), key=self.length.__getitem__, reverse=True):
            if self.ends_free[v]:
                self.ends_free[self.link[v]] = True

    def _add(self, symbol: object) -> None:
        nxt, link, length = self.next, self.link, self.length
        cur = len(length)
        nxt.append({})
        link.append(0)
        length.append(length[self.last] + 1)
        self.ends_free.append(False)
        p = self.last
        while p != -1 and symbol not in nxt[p]:
            nxt[p][symbol] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][symbol]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(length)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                self.ends_free.append(False)
                while p != -1 and nxt[p].get(symbol) == q:
                    nxt[p][symbol] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        self.last = cur

    def __contains__(self, key: tuple[str, ...]) -> bool:
        state = 0
        for stem in key:
            found = self.next[state].get(stem)
            if found is None:
                return False
            state = found
        return self.ends_free[state]


class _Said:
    """What a set of texts said, for asking "is this term among them?".

    With `compose`, a name also counts as said when it is an earlier name completed by words the
    user said: resolving "And the Pro?" after "the Solace 7" gives "Solace 7 Pro", every word of
    which the user typed. (Only for what a rewrite adds: a message's name is kept only whole.)"""

    def __init__(self, texts: Iterable[str], found: Iterable[Term], *, compose: bool = False, catalog: Catalog | None = None) -> None:
        self.texts = list(texts)
        self.found = list(found)
        self.compose = compose
        self.catalog = catalog
        self.identifiers = {f.key for f in self.found if f.kind == "identifier"}
        self.entity_sets = {f.entities for f in self.found if f.entities}
        self.numbers = set().union(*(_numbers_in(t) for t in self.texts))
        self._names: dict[tuple[str, ...], bool] = {}

    @cached_property
    def words(self) -> list[list[_Word]]:
        return [_words(t) for t in self.texts]

    @cached_property
    def said(self) -> set[str]:
        return {w.stem for words in self.words for w in words if w.text[0].isalnum()} if self.compose else set()

    @cached_property
    def runs(self) -> _Runs:
        return _Runs(self.words)

    @cached_property
    def name_sets(self) -> dict[str, list[frozenset[str]]]:
        """The word sets of the names found, each listed under every one of its words."""
        by_word: dict[str, list[frozenset[str]]] = {}
        for key in {frozenset(f.key) for f in self.found if f.kind == "name"}:
            for word in key:
                by_word.setdefault(word, []).append(key)
        return by_word

    def has(self, term: Term) -> bool:
        if term.kind == "identifier":
            return term.key in self.identifiers
        if term.kind == "number":
            return term.key[0] in self.numbers or any(v[0] in self.numbers for v in term.variants)
        # Only names remain.
        if term.entities:
            # Catalog names: as specific or more ("S7" is kept by "Solace 7 Pro", one of the two
            # products it names; "Solace 7" is not kept by "Solace 7 Pro", a different product).
            if any(found <= term.entities for found in self.entity_sets):
                return True
            if self.compose and self._variant_named(term):
                return True
        elif term.key in self.runs or any(v in self.runs for v in term.variants):
            return True
        return self._completes(term) or (self.compose and not term.entities and (self._expands(term) or self._shortens(term)))

    @cached_property
    def whole_names(self) -> set[tuple[str, ...]]:
        """The names the texts said whole: runs of name-like words within a sentence, a single
        word only where it does not start the sentence ("the Dead", "What about Ivanka?")."""
        out: set[tuple[str, ...]] = set()
        for words in self.words:
            run: list[_Word] = []
            for w in [*words, None]:
                if w is not None and w.name_like and run and not w.initial and w.start - run[-1].end <= 1:
                    run.append(w)
                    continue
                if len(run) > 1 or (run and not run[0].initial):
                    out.add(tuple(x.stem for x in run))
                run = [w] if w is not None and w.name_like else []
        return out

    @cached_property
    def acronyms(self) -> set[str]:
        """Capitalised abbreviations the texts said ("NYC", "VCs", "US"), lower case, plural off."""
        return {re.sub(r"s$", "", w.text).lower() for words in self.words for w in words if re.fullmatch(r"[A-Z]{2,}s?", w.text)}

    def _expands(self, term: Term) -> bool:
        """A rewrite's name that spells out a name the texts said: words in front of it ("Airbus
        A380" after "the A380", "Grateful Dead" after "the Dead"), a surname after a one-word name
        ("Ivanka Trump" after "Ivanka"), or the words of an abbreviation ("New York City" after
        "NYC"). The words added carry no digit: "Knoll Mini 2" after "Knoll Mini" is another
        product, and so is any longer name ending with a number; without a catalog the guard
        cannot tell a maker's name from an invented one, which a catalog's entities can."""
        key = term.key
        if any(c.isdigit() for word in key[:-1] for c in word):
            return False
        if any(key[i:] in self.whole_names for i in range(1, len(key))):
            return True
        if (key[0],) in self.whole_names and key[0].isalpha() and all(w.isalpha() for w in key[1:]) and len(key) <= 3:
            return True
        initials = "".join(w[0] for w in re.findall(r"[^\W\d_]+", term.text) if w.lower() not in {"of", "the", "and"})
        return len(initials) >= 2 and initials.lower() in self.acronyms

    @cached_property
    def _by_ends(self) -> dict[tuple[str, str], list[tuple[str, ...]]]:
        by: dict[tuple[str, str], list[tuple[str, ...]]] = {}
        for name in self.whole_names:
            if len(name) > 2:
                by.setdefault((name[0], name[-1]), []).append(name)
        return by

    def _shortens(self, term: Term) -> bool:
        """A rewrite's name that leaves out middle words of a name the texts said, its first and
        last word kept ("Samuel Langley" after "Samuel Pierpont Langley"). The words left out carry
        no digit: "Aero Pro" after "Aero X2 Pro" is another product."""
        key = term.key
        if len(key) < 2:
            return False
        for name in self._by_ends.get((key[0], key[-1]), ()):
            rest = iter(name)  # consumed as matched: `key` must be a subsequence of `name`
            if len(name) > len(key) and all(word in rest for word in key) and not any(c.isdigit() for word in set(name) - set(key) for c in word):
                return True
        return False

    def _variant_named(self, term: Term) -> bool:
        """A catalog product named by its base product and the words that make it a variant, both
        said: "the Solace 7", then "and the Lite?" names the Halden Solace 7 Lite. Its base must have
        been said as one product, and every word the variant adds to the base's catalog name said
        by someone; "Pro" never said keeps "Solace 7 Pro" invented after "the Solace 7"."""
        if self.catalog is None or len(term.entities) != 1:
            return False
        (wanted,) = term.entities
        entity = self.catalog.get(wanted)
        if entity is None:
            return False
        name = _name_stems(entity.name)
        for found in self.entity_sets:
            if len(found) == 1 and wanted not in found and (base := self.catalog.get(next(iter(found)))) is not None:
                stem = _name_stems(base.name)
                if name[: len(stem)] == stem and len(name) > len(stem) and set(name[len(stem) :]) <= self.said:
                    return True
        return False

    def _completes(self, term: Term) -> bool:
        wanted = frozenset(term.key)
        if not wanted <= self.said:
            return False
        done = self._names.get(term.key)
        if done is None:
            seen: dict[frozenset[str], int] = {}
            for word in wanted:
                for key in self.name_sets.get(word, ()):
                    seen[key] = seen.get(key, 0) + 1
            done = self._names[term.key] = any(n == len(key) < len(wanted) for key, n in seen.items())
        return done


def check_rewrite(
    message: str,
    rewrite: str,
    history: Sequence[str | Turn],
    *,
    catalog: Catalog | None = None,
    identifier_patterns: Sequence[str] = DEFAULT_IDENTIFIER_PATTERNS,
    max_chars: int | None = None,
) -> GuardResult:
    """Compare a rewrite with the message and the history it may draw on.

    `lost`: terms of the message missing from the rewrite; `invented`: terms of the rewrite that
    neither the message nor the history contains. Both keep the order of first appearance.
    A rewrite longer than `max_chars` is rejected unread (`too_long`); None means the limit in
    force (`rewrite_limit`: the planning deployment's `[limits] max_rewrite_chars`, else
    `DEFAULT_MAX_REWRITE_CHARS`). An LLM's answer has no other bound.

    >>> check_rewrite("is it covered?", "Is the Solace 7 Pro covered?", ["Solace 7 warranty"]).invented
    ('Solace 7 Pro',)
    """

    limit = _REWRITE_LIMIT.get() if max_chars is None else max_chars
    if len(rewrite) > limit:
        # Nothing an unread rewrite says is vouched for: it counts as inventing, so every caller
        # that rejects inventions rejects it.
        return GuardResult(ok=False, lost=(), invented=(f"{len(rewrite):,} characters unread",), too_long=(len(rewrite), limit))

    def of(text: str) -> tuple[Term, ...]:
        return terms(text, catalog=catalog, identifier_patterns=identifier_patterns)

    said_terms, rewrite_terms = of(message), of(rewrite)
    history = analysed_history(texts(history))  # user and assistant turns, the most recent up to HISTORY_ANALYSIS_CHARS
    history_terms = [t for turn in history for t in of(turn)]

    in_rewrite = _Said([rewrite], rewrite_terms)
    in_sources = _Said([message, *history], [*said_terms, *history_terms], compose=True, catalog=catalog)
    lost = _unique(t.text for t in said_terms if not in_rewrite.has(t))
    invented = _unique(t.text for t in rewrite_terms if not in_sources.has(t))
    return GuardResult(ok=not lost and not invented, lost=lost, invented=invented)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
