"""The oracle probes: does the gold chunk retrieve itself?

- literal probe: the chunk's first 40 whitespace tokens, verbatim;
- generated probe: one question in the passage's own vocabulary. Written by `write_probe`
  (the LLM tier) when one is given; else built deterministically from the passage's key
  sentence (the most informative by the index's IDF, beyond the literal probe's 40 tokens when
  the passage goes on), its main clause turned into a question and labelled `deterministic`
  (see `deterministic_probe`); where none can be built it is labelled `none` and not searched,
  and the case says so: no template stands in for a question.

Either way the vocabulary constraint is checked in code: every content word of the question
(after stemming) must occur in the passage; the words that do not are reported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from pydantic import BaseModel

from querywise.checks.vocabulary import vocabulary_violations
from querywise.text import analyze, terms_of

__all__ = [
    "PROBE_WORDS",
    "GeneratedProbe",
    "WriteProbe",
    "deterministic_probe",
    "generated_probe",
    "key_clause",
    "key_sentence",
    "literal_probe",
    "main_clause",
]

LITERAL_TOKENS = 40
WriteProbe = Callable[[str], str]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
def literal_probe(text: str, n_tokens: int = LITERAL_TOKENS) -> str:
    """The first `n_tokens` whitespace tokens of `text`, verbatim."""
    return " ".join(text.split()[:n_tokens])


def key_sentence(text: str, idf: Callable[[str], float], *, beyond: int = 0) -> str:
    """The sentence of `text` whose distinct terms carry the most IDF (ties: the earlier one);
    with `beyond` = N, a sentence that ends after the first N whitespace tokens when the passage
    has one (so the generated probe is not the literal probe's words asked again)."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if len(s.split()) >= 3] or [text.strip()]
    if beyond:
        literal = literal_probe(text, beyond)
        later = [s for s in sentences if " ".join(s.split()) not in literal]
        sentences = later or sentences
    return max(sentences, key=lambda s: sum(idf(t) for t in set(analyze(s))))


#: The only words a deterministic probe adds to the passage's own: question words that the
#: vocabulary rule allows (`checks.vocabulary`), so the rule holds by construction.
PROBE_WORDS = ("How", "do", "I", "Does", "What", "is")

_CLAUSE = re.compile(r"\s*;\s*|\s+[\u2013\u2014-]\s+")
_DETERMINERS = frozenset(["the", "a", "an", "this", "that", "these", "those", "your", "our", "its", "their", "his", "her", "my", "each", "every", "all", "any", "some", "no", "both"])
_AUX = frozenset(["is", "are", "was", "were", "can", "could", "will", "would", "should", "must", "may", "might", "shall"])
# Words that end a noun phrase: a "subject" holding one of them is a clause of its own.
_SUBORDINATE = frozenset(
    ["after", "before", "when", "while", "if", "because", "although", "though", "since", "until", "unless", "that", "which", "who", "whom", "whose", "where", "whether", "once", "as", "but", "so"])
# Words that open a sentence without being an imperative verb ("For the best results", "Then the ...").
_NOT_VERBS = _DETERMINERS | _AUX | _SUBORDINATE | frozenset(
    ["for", "in", "on", "at", "to", "from", "with", "by", "of", "about", "during", "under", "over", "into", "through", "between", "within", "without", "per", "via", "across", "against", "along", "among", "around", "behind", "below", "beside", "beyond", "inside", "outside", "near", "off", "onto", "toward", "towards", "upon", "like", "here", "there", "then", "now", "also", "only", "even", "just", "not", "yes", "it", "he", "she", "they", "we", "you", "i"])
_ES_PLURAL = ("sses", "shes", "ches", "xes", "zes", "oes")
# Before a word in -s, these make it a plural noun ("four hours", "unopened items", "postal
# details"), not a verb: the subject may not end on a number or an adjective-looking word.
_NUMBERS = frozenset(
    ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "fifteen", "twenty", "thirty", "forty", "fifty", "sixty", "ninety", "hundred", "thousand", "several", "few"])
_ADJECTIVE_ENDINGS = ("ed", "al", "ous", "ive", "ful", "less", "able", "ible", "ic")
_TRAILING = ".,;:!?"
#: The longest subject a verb is looked for after (scientific subjects run long: "Dysregulation of
#: RTK and p53 signalling in derived cells").
MAX_SUBJECT = 8


def key_clause(sentence: str, idf: Callable[[str], float]) -> tuple[str, str]:
    """A short heading before a colon ("Faucet leaks: ...", kept to open the question) and the
    clause of the rest whose distinct terms carry the most IDF (ties: the earlier one)."""
    heading, body = "", sentence.strip()
    head, colon, rest = body.partition(":")
    if colon and rest.strip() and 1 <= len(head.split()) <= 5 and len(rest.split()) >= 3:
        heading, body = head.strip(), rest.strip()
    clauses = [c.strip() for c in _CLAUSE.split(body) if len(c.split()) >= 3] or [body]
    return heading, max(clauses, key=lambda c: sum(idf(t) for t in set(analyze(c))))


# "We found that ...", "These results suggest that ...": the frame is the grammatical main clause,
# the finding is what the passage says; the finding is asked.
_REPORTING = re.compile(
    r"^(?:[\w-]+\s){0,4}?"
    r"(?:found|find|finds|show|shows|showed|shown|suggest|suggests|suggested|indicate|indicates|indicated|demonstrate|"
    r"demonstrates|demonstrated|conclude|concluded|report|reports|reported|reveal|reveals|revealed|confirm|confirms|confirmed)"
    r"\s+that\s+", re.IGNORECASE)


_BRACKETS = re.compile(r"\s*[(\[][^()\[\]]*[)\]]")
_SECTION = re.compile(r"^(?:[A-Z]{3,}\b[:.]?\s+)+")  # "RESULTS", "METHODS AND FINDINGS" before the sentence
# Openers of a phrase that a comma closes before the main clause ("Thus, ...", "Compared with X, ...").
_OPENERS = frozenset(["thus", "however", "moreover", "finally", "overall", "together", "importantly", "compared", "consistent",
                      "here", "therefore", "furthermore", "additionally", "notably", "specifically", "similarly", "conversely"])


def main_clause(clause: str) -> str:
    """The clause without bracketed asides, a leading section label, a reporting frame ("We found
    that X ..." -> "X ...") or a leading subordinate or prepositional phrase closed by a comma
    ("Although A, B ..." -> "B ...")."""
    body = _BRACKETS.sub("", _SECTION.sub("", clause.strip()))
    body = _REPORTING.sub("", body, count=1)
    first = body.split(" ", 1)[0].lower().strip(",")
    _, comma, rest = body.partition(", ")
    if comma and (first in _SUBORDINATE or first in _OPENERS or first in _NOT_VERBS - _DETERMINERS) and len(rest.split()) >= 4:
        body = _REPORTING.sub("", rest.strip(), count=1)
    return body[:1].upper() + body[1:] if body else clause


def _name_like(word: str, following: str) -> bool:
    """Keep the capital of a clause's first word that looks like a name: a digit, capitals
    after the first letter ("X3", "iPhone", "NHS"), or a capitalised word after it ("Vela X3")."""
    return any(ch.isdigit() for ch in word) or any(ch.isupper() for ch in word[1:]) or following[:1].isupper()


def _lower_first(tokens: list[str]) -> list[str]:
    if not tokens or (tokens[0].lower() not in _DETERMINERS and _name_like(tokens[0], tokens[1] if len(tokens) > 1 else "")):
        return tokens
    return [tokens[0][:1].lower() + tokens[0][1:], *tokens[1:]]


def _plain(word: str) -> bool:
    return word.replace("-", "").replace("'", "").isalnum()


_CONJUNCTIONS = frozenset(["and", "or", "but", "nor", "yet"])
_PAST = re.compile(r"^[a-z]{3,}(?:ed|ied)$")
_PRONOUNS = frozenset(["we", "i", "you", "they", "he", "she", "it", "one"])


def _subject_ok(subject: list[str]) -> bool:
    """A noun phrase, as far as words can tell: 1 to `MAX_SUBJECT` plain words, none that opens a
    clause, not opening on a preposition or a conjunction ("and in recent years"), not ending on a
    determiner ("The tools" is not subject "The" + verb "tools") nor on a preposition ("the
    mutations result in" is no subject of "enhanced")."""
    return (1 <= len(subject) <= MAX_SUBJECT and subject[0].lower() not in (_NOT_VERBS - _DETERMINERS) | _CONJUNCTIONS and all(_plain(w) and w.lower() not in _SUBORDINATE | _AUX | _PRONOUNS for w in subject)
            and subject[-1].lower() not in _DETERMINERS and (len(subject) == 1 or subject[-1].lower() not in _NOT_VERBS))


def _base_form(verb: str) -> str | None:
    """The plain form of a third-person verb ("blinks" -> "blink", "carries" -> "carry"), when
    it has the same stem (the vocabulary rule compares stems); "has" -> "have" (a question word)."""
    if verb == "has":
        return "have"
    base = verb[:-3] + "y" if verb.endswith("ies") else verb[:-2] if verb.endswith(_ES_PLURAL) else verb[:-1]
    return base if terms_of([base], stopwords=False) == terms_of([verb], stopwords=False) else None




def _as_question(clause: str) -> str | None:
    """A declarative or imperative clause as a question, in its own words plus `PROBE_WORDS`:

    - imperative ("Replace the washer", "Step on the scale") -> "How do I replace the washer?"
    - auxiliary after a short subject ("Opened earbuds can be returned ...") -> "Can opened earbuds be returned ...?"
    - third-person verb after a short subject ("The indicator blinks blue ...") -> "Does the indicator blink blue ...?"
    - a past verb after a short subject ("Aspirin reduced the risk ...") -> "What reduced the risk ...?" (the
      subject asked for: no verb form is made up)
    - anything else: None (no main verb found: no question is made up from a template).
    """
    tokens = clause.split()
    first = tokens[0].lower()
    verb_first = first.replace("-", "").isalpha() and first not in _NOT_VERBS and not first.endswith(("s", "ing", "ed", "ly"))
    imperative = "How do I " + " ".join([first, *tokens[1:]]) + "?"
    # a verb, then its object: "Replace the washer", or a lower-case verb and a name ("open Billing")
    if verb_first and len(tokens) >= 2 and (tokens[1].lower() in _DETERMINERS or (tokens[0] == first and tokens[1][:1].isupper())):
        return imperative
    for i, tok in enumerate(tokens[1 : MAX_SUBJECT + 2], start=1):
        if tok.lower() in _AUX and i + 1 < len(tokens) and _subject_ok(tokens[:i]):
            return tok[:1].upper() + tok[1:].lower() + " " + " ".join([*_lower_first(tokens[:i]), *tokens[i + 1:]]) + "?"
        if tok.lower() in _AUX or not _plain(tok):
            break
    # a verb, a preposition, then its object ("Step on the platform"); after the auxiliary test,
    # which reads "Warranty on the product is ..." as the statement it is
    if verb_first and len(tokens) >= 3 and tokens[1].lower() in _NOT_VERBS - _DETERMINERS and tokens[2].lower() in _DETERMINERS:
        return imperative
    for i, tok in enumerate(tokens[1 : MAX_SUBJECT + 1], start=1):
        w, before = tok.lower(), tokens[i - 1].lower()
        if tok == w and w.isalpha() and len(w) >= 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")) \
                and i + 1 < len(tokens) and _subject_ok(tokens[:i]) and not before.isdigit() \
                and not _PAST.match(tokens[i + 1].lower()) and tokens[i + 1].lower() not in _AUX and before.split("-")[-1] not in _NUMBERS \
                and not before.endswith(_ADJECTIVE_ENDINGS):
            base = _base_form(w)
            if base is not None:
                return "Does " + " ".join([*_lower_first(tokens[:i]), base, *tokens[i + 1:]]) + "?"
    for i, tok in enumerate(tokens[1 : MAX_SUBJECT + 1], start=1):  # a past verb after a short subject: ask for the subject
        rest = [t.lower() for t in tokens[i + 1:]]
        if tok == tok.lower() and _PAST.match(tok) and rest and _subject_ok(tokens[:i]) and not _AUX & set(rest) \
                and tokens[i - 1].lower() not in _AUX:
            return "What " + " ".join(tokens[i:]) + "?"
    return None


def deterministic_probe(text: str, idf: Callable[[str], float], *, max_words: int = 24, beyond: int = 0) -> str | None:
    """A question from the passage's key sentence (`key_sentence`, beyond the first `beyond`
    tokens when it can), its main clause (`key_clause`, `main_clause`) turned into a question
    (`_as_question`), at most `max_words` words (cut at a comma when one is near), its heading in
    front; a heading over a verbless rest is asked for ("Runtime per charge: eleven hours" ->
    "What is runtime per charge?"). None when no main clause can be turned into a question.

    >>> deterministic_probe("Faucet leaks: replace the cartridge washer.", lambda t: 1.0)
    'Faucet leaks: how do I replace the cartridge washer?'
    """
    heading, clause = key_clause(key_sentence(text, idf, beyond=beyond), idf)
    tokens = main_clause(clause).split()
    if len(tokens) > max_words:
        cut = max((i for i, w in enumerate(tokens[:max_words]) if w.endswith(",") and i >= 5), default=max_words - 1)
        tokens = tokens[: cut + 1]
    tokens = [t for t in (w.lstrip("-*\u2022") for w in tokens) if t]  # list bullets
    if not tokens:
        return None
    tokens[-1] = tokens[-1].rstrip(_TRAILING) or tokens[-1]
    question = _as_question(" ".join(tokens).rstrip(_TRAILING))
    if question is None:
        if heading and all(_plain(w) for w in heading.split()):
            return "What is " + " ".join(_lower_first(heading.split())) + "?"
        return None
    if not heading:
        return question
    return f"{heading}: {' '.join(_lower_first(question.split()))}"


class GeneratedProbe(BaseModel):
    """The generated probe, who wrote it, and the words it borrowed from outside the passage."""

    text: str  # "" when none could be built
    by: str  # "deterministic", "llm" or "none"
    violations: list[str] = []
    error: str | None = None  # the LLM writer's failure, when it fell back


#: Why a deterministic probe could not be built, as the report says it.
NOT_BUILT = "no question built: the key sentence has no main clause to ask (no verb after a short subject, no heading)"


def generated_probe(text: str, idf: Callable[[str], float], write_probe: WriteProbe | None = None) -> GeneratedProbe:
    """The generated probe for passage `text`; an LLM writer that fails falls back to the
    deterministic question (from a key sentence beyond the literal probe's tokens when there is
    one), and the failure is kept. Where no question can be built, `by` is "none", the text
    empty and `error` says why (nothing is searched for it)."""
    error = None
    if write_probe is not None:
        try:
            question = write_probe(text).strip()
            if question:
                return GeneratedProbe(text=question, by="llm", violations=vocabulary_violations(question, text))
            error = "the writer returned an empty question"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
    built = deterministic_probe(text, idf, beyond=LITERAL_TOKENS)
    if built is None:
        return GeneratedProbe(text="", by="none", error=f"{error}; {NOT_BUILT}" if error else NOT_BUILT)
    return GeneratedProbe(text=built, by="deterministic", violations=vocabulary_violations(built, text), error=error)


def idf_from(terms: Mapping[str, int], df: list[int], n_docs: int) -> Callable[[str], float]:
    """BM25's IDF over an index lexicon (unknown terms count as rarest)."""

    def idf(term: str) -> float:
        i = terms.get(term)
        d = df[i] if i is not None and i < len(df) else 0
        return math.log(1 + (n_docs - d + 0.5) / (d + 0.5))

    return idf
