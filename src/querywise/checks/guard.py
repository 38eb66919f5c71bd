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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from querywise.catalog import Catalog
from querywise.text import analyze

__all__ = ["DEFAULT_IDENTIFIER_PATTERNS", "GuardResult", "Term", "check_rewrite", "terms"]

# Two or more letters, an optional hyphen, three or more digits: part numbers and SKUs in any case.
DEFAULT_IDENTIFIER_PATTERNS: tuple[str, ...] = (r"\b[A-Za-z]{2,}-?\d{3,}\b",)

Kind = Literal["identifier", "name", "number"]


@dataclass(frozen=True)
class Term:
    """One protected term of a text: what it reports (`text`) and how it compares (`key`).

    Catalog names compare by `entities` (catalog ids); other names by `key`, their word stems.
    """

    kind: Kind
    text: str
    key: tuple[str, ...]
    entities: frozenset[str] = frozenset()


@dataclass(frozen=True)
class GuardResult:
    """Whether a rewrite keeps the message's terms and adds none that nobody said.

    >>> check_rewrite("is hc3471 in stock", "Are Solace 7 Pro cushions in stock?", ["Solace 7 Pro parts"])
    GuardResult(ok=False, lost=('HC-3471',), invented=())
    """

    ok: bool
    lost: tuple[str, ...]
    invented: tuple[str, ...]

    @property
    def reason(self) -> str:
        if self.ok:
            return "every name, identifier and number kept; nothing added"
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
_NUMBER = re.compile(r"(?<![\w.])([A-Za-z]*\d+(?:[.,:/]\d+)*)((?:%|[A-Za-z]+)?(?:-[A-Za-z]+)?)(?![\w])")


@dataclass(frozen=True)
class _Word:
    text: str
    start: int
    end: int
    stem: str
    initial: bool

    @property
    def name_like(self) -> bool:
        """Could be part of a name: a capital (not explained by starting the sentence), or a digit."""
        if not self.text[0].isalnum() or re.split(r"['\u2019]", self.text)[0] == "I":
            return False  # "I", "I'm": capitalised by spelling rules
        if any(c.isdigit() for c in self.text):
            return True
        if not self.text[0].isupper():
            return False
        return not (self.initial and self.text.lower() in _SENTENCE_WORDS)


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
        if tok[0].isalnum():
            out.append(_Word(tok, m.start(), m.end(), _stem(tok), initial))
            initial = tok.endswith(".") and not re.search(r"\w\.\w", tok)  # "D.C." ends no sentence
        else:
            out.append(_Word(tok, m.start(), m.end(), tok, initial))
            initial = tok in ".?!" or (initial and tok in "\"'(")
    return out


def _identifier_key(raw: str) -> str:
    compact = re.sub(r"[\s_-]+", "", raw.upper())
    return re.sub(r"(?<=[A-Z])(?=\d)", "-", compact, count=1)


def _free(span: tuple[int, int], claimed: list[tuple[int, int]]) -> bool:
    return all(span[1] <= a or span[0] >= b for a, b in claimed)


def _capitalised_names(text: str, claimed: list[tuple[int, int]]) -> list[Term]:
    """Runs of two or more name-like words, adjacent but for a space or a hyphen, that start
    with a capitalised word."""
    words = [w for w in _words(text) if _free((w.start, w.end), claimed)]
    runs: list[list[_Word]] = []
    for w in words:
        joined = runs and runs[-1] and re.fullmatch(r"[ \t-]?", text[runs[-1][-1].end : w.start]) is not None
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
            out.append(Term("name", text[run[0].start : run[-1].end], tuple(w.stem for w in run)))
            claimed.append((run[0].start, run[-1].end))
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
    claimed: list[tuple[int, int]] = []
    out: list[Term] = []
    mentions = catalog.mentions(text) if catalog is not None else []
    for pattern in identifier_patterns:
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            if _free(m.span(), claimed):
                key = _identifier_key(m.group(0))
                # A catalog part number also names its product, so a rewrite may name it instead.
                named = frozenset(e.id for x in mentions if not _free((x.start, x.end), [m.span()]) for e in x.entities)
                out.append(Term("identifier", key, (key,), named))
                claimed.append(m.span())
    if catalog is not None:
        for mention in mentions:
            if _free((mention.start, mention.end), claimed):
                ids = frozenset(e.id for e in mention.entities)
                out.append(Term("name", mention.text, tuple(w.stem for w in _words(mention.text)), ids))
                claimed.append((mention.start, mention.end))
    else:
        out.extend(_capitalised_names(text, claimed))
    for m in _NUMBER.finditer(text):
        if _free(m.span(), claimed):
            out.append(Term("number", m.group(0), (m.group(1).lower().replace(",", ""),)))
    return tuple(out)


def _contains_name(text_words: list[_Word], key: tuple[str, ...]) -> bool:
    """The stems of `key` occur in a row in the text and the run does not go on into a longer
    name ("Solace 7" is not in "Solace 7 Pro")."""
    stems = [w.stem for w in text_words]
    n = len(key)
    for i in range(len(stems) - n + 1):
        if tuple(stems[i : i + n]) != key:
            continue
        after = text_words[i + n] if i + n < len(text_words) else None
        if after is not None and after.name_like and after.start - text_words[i + n - 1].end <= 1:
            continue
        return True
    return False


def _numbers_in(text: str) -> set[str]:
    """Every number of the text, even inside a name or an identifier: for a number, being said
    at all is enough."""
    return {m.group(1).lower().replace(",", "") for m in _NUMBER.finditer(text)} | set(re.findall(r"\d+(?:[.,]\d+)*", text))


class _Said:
    """What a set of texts said, for asking "is this term among them?".

    With `compose`, a name also counts as said when it is an earlier name completed by words the
    user said: resolving "And the Pro?" after "the Solace 7" gives "Solace 7 Pro", every word of
    which the user typed. (Only for what a rewrite adds: a message's name is kept only whole.)"""

    def __init__(self, texts: Iterable[str], found: Iterable[Term], *, compose: bool = False) -> None:
        self.texts = list(texts)
        self.found = list(found)
        self.words = [_words(t) for t in self.texts]
        self.numbers = set().union(*(_numbers_in(t) for t in self.texts))
        self.said = {w.stem for words in self.words for w in words if w.text[0].isalnum()} if compose else set()

    def has(self, term: Term) -> bool:
        if term.kind == "identifier":
            return any(f.kind == "identifier" and f.key == term.key for f in self.found)
        if term.kind == "number":
            return term.key[0] in self.numbers
        # Only names remain.
        if term.entities:
            # Catalog names: as specific or more ("S7" is kept by "Solace 7 Pro", one of the two
            # products it names; "Solace 7" is not kept by "Solace 7 Pro", a different product).
            if any(f.entities and f.entities <= term.entities for f in self.found):
                return True
        elif any(_contains_name(words, term.key) for words in self.words):
            return True
        return self._completes(term)

    def _completes(self, term: Term) -> bool:
        wanted = set(term.key)
        return any(f.kind == "name" and set(f.key) < wanted <= self.said for f in self.found)


def check_rewrite(
    message: str,
    rewrite: str,
    history: Sequence[str],
    *,
    catalog: Catalog | None = None,
    identifier_patterns: Sequence[str] = DEFAULT_IDENTIFIER_PATTERNS,
) -> GuardResult:
    """Compare a rewrite with the message and the history it may draw on.

    `lost`: terms of the message missing from the rewrite; `invented`: terms of the rewrite that
    neither the message nor the history contains. Both keep the order of first appearance.

    >>> check_rewrite("is it covered?", "Is the Solace 7 Pro covered?", ["Solace 7 warranty"]).invented
    ('Solace 7 Pro',)
    """

    def of(text: str) -> tuple[Term, ...]:
        return terms(text, catalog=catalog, identifier_patterns=identifier_patterns)

    said_terms, rewrite_terms = of(message), of(rewrite)
    history_terms = [t for turn in history for t in of(turn)]

    in_rewrite = _Said([rewrite], rewrite_terms)
    in_sources = _Said([message, *history], [*said_terms, *history_terms], compose=True)
    lost = _unique(t.text for t in said_terms if not in_rewrite.has(t))
    invented = _unique(t.text for t in rewrite_terms if not in_sources.has(t))
    return GuardResult(ok=not lost and not invented, lost=lost, invented=invented)


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
