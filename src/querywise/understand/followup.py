"""Follow-up gate: does this message lean on the conversation, or does it stand alone?

Pass-through is the default, so the gate says yes only when it can point at the words that need
the history. Each detector below is a general fact about English reference, not a list of topics:

- a third-person pronoun with no antecedent in the message ("does it cover water damage?");
- a demonstrative or a pro-form ("for that", "the cheaper one", "held there", "if so");
- an elliptical opener or particle ("And the Pro?", "what about the EU?", "the Lite too?");
- a word that presupposes an earlier set or statement ("other", "else", "tell me more");
- a two-place relation with one term ("How is the Lite different?");
- a noun left out after a superlative, a quantifier or "which" ("the cheapest in the range");
- a description that needs an anchor the message does not give: a definite with no complement
  ("the address"), a classifier noun with no "of" ("what kind do I need?"), a domain-relative
  adjective ("popular colours"), an existential with no place ("is there a deadline?");
- a message too short to have a subject of its own.

A product named in the message (from the catalog) anchors the description detectors, and can be
the referent of a pronoun. The gate does not resolve anything: the rewriter does, and the guard
checks it. `concat_standalone` is the deterministic standalone form used until an LLM rewriter
is configured: the previous user turn followed by the message.

The gate is linear in the message (every lookup a detector makes is indexed), and bounded: a
message longer than `text.ANALYSIS_CHARS` (4,000 characters) stands alone, and topic continuity
reads the most recent `text.HISTORY_ANALYSIS_CHARS` of the conversation.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from querywise.catalog import Catalog
from querywise.text import ANALYSIS_CHARS, analysed_history, analyze  # the shared stemmer, so "language" meets "languages"

__all__ = ["FollowUp", "check_follow_up", "concat_standalone"]


@dataclass(frozen=True)
class FollowUp:
    """The gate's verdict and the words that decided it.

    >>> check_follow_up("And the Pro?", ["How long is the warranty on the Solace 7?"]).cues
    ('opener:and',)
    """

    needs_context: bool
    reason: str
    cues: tuple[str, ...] = ()
    # "strong": a cue in the words (a pronoun with no antecedent, "and the Pro?") -- the message
    # alone cannot be searched. "weak": only topic continuity -- the message may well stand on
    # its own, so the standalone form is searched next to it, never instead of it.
    strength: Literal["strong", "weak"] | None = None


# --- closed classes of English ----------------------------------------------------------------


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Third-person personal pronouns point at something said before; first and second person point
# at the speakers, who never need resolving.
_PERSONAL = _set("it its itself they them their theirs themselves he him his himself she her hers herself")
_POSSESSIVE = _set("its their his her")
_BE = _set("is are was were be been being am 's 're 'm")
_AUX = _BE | _set("do does did can could will would shall should may might must has have had 've 'd 'll ca wo")
_WH = _set("what why how where when who whom whose which")
_PREP = _set(
    "of for on in at from to with about between among during after before around under over into onto "
    "across through without within against toward towards than as by via like per near versus vs"
)
_ARTICLE = _set("the a an")
# The speakers anchor what they own or do: "the limit on my card", "the accent you use".
_SPEAKERS_POSSESSIVE = _set("my our your")
_SPEAKERS_SUBJECT = _set("i we you")
_PERSONAL_SUBJECT = _set("he she they")
_DET = _ARTICLE | _set("this that these those my your our his her its their some any no every each another")
_QUANTIFIER = _set("some any both either neither none each several many few all")
_FUNCTION = (
    _PERSONAL
    | _AUX
    | _WH
    | _PREP
    | _ARTICLE
    | _QUANTIFIER
    | _set(
        "this that these those such no not n't i me my mine myself we us our ours you your yours yourself "
        "one ones and or but nor so if then there here yes also too very really just only even still "
        "already else more most less least much other others another same own please thanks thank ok okay "
        "ever generally tell give show explain describe know let get got"
    )
)
# Nouns whose definite form is unique in any situation ("the world", "the summer"): the article
# needs no earlier mention.
_UNIQUE = _set(
    "world earth sun moon sky universe internet web weather environment economy past present future "
    "public morning afternoon evening night day weekend week month year summer winter spring autumn "
    "fall time moment beginning end"
)
# After "this", these anchor it to the time of speaking, not to an earlier turn.
_DEICTIC_TIME = _set(
    "year week month morning afternoon evening weekend season summer winter spring autumn fall century decade time moment"
)
# Verbs whose subject "it" is impersonal: "it seems that", "what does it mean", weather.
_IMPERSONAL = _set("mean means matter matters depend depends seem seems appear appears raining snowing rains snows")
_TIME_NOUNS = _set("time day date")
# Tough-movement adjectives: in "is it easy to learn?" the infinitive has a gap that "it" fills,
# so "it" refers; after other adjectives "is it ... to" is an expletive ("is it possible to").
_TOUGH = _set(
    "easy easier easiest hard harder hardest difficult tough tougher simple simpler fun safe safer cheap cheaper expensive"
)
# Two-place relations need two terms; a message that gives one leaves the other to the context.
_RELATION_NOUN = _set(
    "difference differences similarity similarities relationship relation relations connection link comparison"
)
# A role or a contribution is one thing's part *in* another: "the role of X" leaves the other out.
_PART_IN = _set("role roles contribution contributions")
_RELATION_PRED = _set("different differ differs compare compared compares similar alike related relate comparable")
_STANDARD = _set("from than to with as versus vs between")
# Classifier nouns are relational: a type is a type *of* something. As a head without "of"
# ("what kind do I need?") the something is whatever the conversation is about.
_CLASSIFIER = _set(
    "kind kinds type types sort sorts variety varieties category categories class classes form forms "
    "example examples version versions model models member members part parts style styles"
)
# Adjectives relative to a domain ("popular" where? "main" among what?): in front of a noun with
# no complement, the domain is the conversation's.
_DOMAIN_ADJ = _set(
    "main key major important popular common typical famous notable primary principal leading basic usual standard traditional"
)
_SUPERLATIVE = _set("best worst first last most least next")
# Ordered relative to the moment of speaking ("the next song", "the last input"), not to a turn.
_DEICTIC_ORDER = _set("next last previous current latest default")
# Degree words before a comparative ("much cheaper", "any better").
_DEGREE = _set("much any even far way slightly bit lot no")
_OPENERS = _set("and but or also plus even")
_OPENER_PAIRS = {("what", "about"), ("how", "about"), ("if", "so"), ("if", "not"), ("why", "not"), ("same", "for")}
# Additive and substitutive particles presuppose an earlier statement ("the Lite too?").
_FINAL_PARTICLES = _set("too instead either")
# Complements that complete a noun phrase on their own: "the return window for X", "the one that".
_COMPLEMENT = _set("of for about between among that which who whom whose where 's")

_TOKEN = re.compile(
    r"[A-Za-z0-9]+(?=n't\b)|n't\b|[A-Za-z0-9]+(?:[-./][A-Za-z0-9]+)*|'(?:s|re|ve|d|ll|m)\b|[^\sA-Za-z0-9]"
)
_CLAUSE_PUNCT = _set(". ? ! ; : ,")
_SENTENCE_END = _set(". ? !")
_SHORT = 2


class _Tok:
    """One token, with its word classes worked out once (the detectors ask them per token)."""

    __slots__ = ("content", "initial", "low", "named", "start", "text", "word")

    def __init__(self, text: str, low: str, start: int, initial: bool = False) -> None:
        self.text, self.low, self.start = text, low, start
        self.initial = initial  # first word of a sentence, capitalised by spelling rules only
        self.word = low[0].isalnum() or low[0] == "'"
        self.content = self.word and low not in _FUNCTION and not low.isdigit()
        # Part of a name ("Solace 7", "the 321 method"): a digit, or a capital that sentence
        # spelling does not explain; an acronym ("US", "ACL") even when it spells a function word.
        self.named = self.word and (
            (len(text) > 1 and text.isupper())
            or (low not in _FUNCTION and (any(c.isdigit() for c in text) or (text[0].isupper() and not initial)))
        )

    def __repr__(self) -> str:
        return f"_Tok({self.text!r}, {self.start})"


class _Message:
    """Tokens of one message with the lookups the detectors share.

    Every lookup a detector makes per token is O(1) or O(log n) (indexes built once per
    message), so the gate is linear in the message: no detector rescans the rest or the start
    of the message from each token."""

    def __init__(self, text: str, anchors: Sequence[tuple[int, int]], *, catalog: bool = False) -> None:
        self.text = text
        # Same length as the message, so catalog offsets still point at the right tokens. The
        # token pattern splits "it's" into "it" + "'s": a contracted pronoun is still a pronoun.
        text = text.replace("\u2019", "'").replace("\u2018", "'")
        self.toks: list[_Tok] = []
        initial = True
        for found in _TOKEN.finditer(text):
            raw = found.group(0)
            tok = _Tok(raw, raw.lower(), found.start(), initial and raw[0].isalnum())
            self.toks.append(tok)
            initial = tok.low in _SENTENCE_END or (initial and not tok.word)
        self.low = [t.low for t in self.toks]
        self.words = [t for t in self.toks if t.word]
        # Catalog mentions anchor a message: they are what its descriptions and pronouns are
        # about. Without a catalog, a run of name words can still be a pronoun's referent.
        self.anchors = list(anchors)
        self.referents = list(anchors) if catalog else self._name_runs()
        self.clause_starts = self._clause_starts()
        # Where each word last occurs; the first token that is content or named (len: none).
        self.last = {w: i for i, w in enumerate(self.low)}
        self.first_topic = next((i for i, t in enumerate(self.toks) if t.content or t.named), len(self.toks))

    def _name_runs(self) -> list[tuple[int, int]]:
        """Model-like names ("Solace 7", "Knoll Max 2"): a capitalised word with a number in the
        run. Other capitalised words (places, holidays, institutions) are rarely what "it" is."""
        runs: list[list[_Tok]] = []
        for i, t in enumerate(self.toks):
            if t.named and i and self.toks[i - 1].named and runs:
                runs[-1].append(t)
            elif t.named:
                runs.append([t])
        return [
            (run[0].start, run[-1].start + len(run[-1].text))
            for run in runs
            if len(run) > 1 and run[0].text[0].isupper() and any(c.isdigit() for x in run for c in x.text)
        ]

    def at(self, i: int) -> str:
        return self.low[i] if 0 <= i < len(self.low) else ""

    def _clause_starts(self) -> list[int]:
        """Where clauses start: after clause punctuation, or at a coordinator that starts one."""
        starts = [0]
        for i, w in enumerate(self.low[:-1]):
            nxt = self.low[i + 1]
            # "X, and why is it ...", "X and its Y", and a second verb with its own object
            # ("move the money and put it ...").
            coordinator = w in {"and", "but", "or", "so", "then"}
            if w in _CLAUSE_PUNCT or (
                coordinator and (nxt in _WH or nxt in _AUX or nxt in _PERSONAL or self.at(i + 2) in _PERSONAL)
            ):
                starts.append(i + 1)
        return starts

    def antecedent_before(self, i: int) -> bool:
        """A noun in an earlier clause can be the referent (a pronoun cannot take one from its own
        clause); so can the first conjunct of "X and its Y"."""
        clause = self.clause_starts[bisect.bisect_right(self.clause_starts, i) - 1]
        if clause > 0 and self.first_topic < clause:
            return True
        return self.at(i - 1) == "and" and self.low[i] in _POSSESSIVE and i >= 2 and self.toks[i - 2].content

    def after(self, i: int, words: Sequence[str]) -> bool:
        """Whether any of `words` occurs after position `i`."""
        return any(self.last.get(w, -1) > i for w in words)

    def anchor_after(self, i: int) -> bool:
        """A named product after the pronoun in an adjunct ("reset it ... on the Solace 7") is its
        referent; as an object or a comparison ("does it fit the X?") it is not."""
        return self._adjunct_anchor > i

    @cached_property
    def _adjunct_anchor(self) -> int:
        """The last token k that introduces a referent as an adjunct: "on/for/of/about", then only
        articles and name words up to the referent (-1: none). A pronoun before k is anchored."""
        if not self.referents:
            return -1
        # stop[k]: the last index <= k that is neither an article nor a name word (-1: none).
        stop, last = [], -1
        for k, t in enumerate(self.toks):
            if not (self.low[k] in _ARTICLE or t.named):
                last = k
            stop.append(last)
        starts = [t.start for t in self.toks]
        best = -1
        for start, _end in self.referents:
            j = bisect.bisect_left(starts, start)
            k = stop[j - 1] if j > 0 else -1
            if k >= 0 and self.low[k] in {"on", "for", "of", "about"}:
                best = max(best, k)
        return best

    @cached_property
    def _phrase_end(self) -> list[int]:
        """For each position, the first index at or after it that cannot be part of a noun phrase."""
        end, j = [0] * (len(self.toks) + 1), len(self.toks)
        end[j] = j
        for k in range(len(self.toks) - 1, -1, -1):
            if not (self.toks[k].content or self.toks[k].named or self.low[k] in {"most", "least"}):
                j = k
            end[k] = j
        return end

    @cached_property
    def _named_before(self) -> list[int]:
        """How many name words come before each position."""
        counts = [0]
        for t in self.toks:
            counts.append(counts[-1] + t.named)
        return counts

    def noun_phrase_end(self, i: int) -> int:
        """The index just after the modifiers and head that follow position `i`."""
        return self._phrase_end[i + 1] if i + 1 <= len(self.toks) else len(self.toks)

    def names_in(self, i: int, j: int) -> bool:
        """Whether a name word lies in positions [i, j)."""
        return self._named_before[j] > self._named_before[i]

    def completed(self, j: int) -> bool:
        """A complement at `j` finishes the noun phrase before it: an of/for/about phrase, a
        relative clause (also without "that": "the accent you use"), an infinitive, or a phrase
        that names something or belongs to the speakers ("on my card")."""
        nxt = self.at(j)
        following = self.toks[j + 1 : j + 5]
        if nxt in _SPEAKERS_SUBJECT or nxt in _PERSONAL_SUBJECT:
            return True
        if nxt in _COMPLEMENT or (nxt == "to" and following[:1] and following[0].content):
            return any(t.content or t.named for t in following)
        return nxt in _PREP and any(t.named or t.low in _SPEAKERS_POSSESSIVE for t in following)

    @cached_property
    def coordinated(self) -> bool:
        """Two content words joined by "and"/"or": a relation gets both of its terms."""
        return any(
            self.low[i] in {"and", "or"}
            and self.toks[i - 1].content
            and (self.toks[i + 1].content or self.low[i + 1] in _ARTICLE)
            for i in range(1, len(self.toks) - 1)
        )

    @cached_property
    def restricted_wh(self) -> bool:
        """True for "which language ...", "what type ...": the wh-phrase supplies a head noun."""
        return any(self.low[i] in {"which", "what"} and self.toks[i + 1].content for i in range(len(self.toks) - 1))


Cue = tuple[str, str]


# --- detectors ----------------------------------------------------------------------------------


def _expletive_it(m: _Message, i: int) -> bool:
    """Expletive "it", with no referent: extraposition next to a copula ("is it possible to",
    "it is true that"), "it takes/costs ... to", "what does it mean", weather."""
    if any(w in _TIME_NOUNS for w in m.low[max(0, i - 3) : i]):
        return True  # "what time is it", "what day is it"
    after = m.low[i + 1 : i + 8]
    copula = m.at(i - 1) in _BE or bool(after[:1] and after[0] in _BE)
    skip = 0
    while skip < len(after) and (after[skip] in _BE or after[skip] == "not"):
        skip += 1
    after = after[skip:]
    head = after[0] if after else ""
    if copula and len(after) >= 2 and head.isalpha() and head not in _AUX and not head.endswith("ed"):
        # "is it possible (for me) to ...", "it is true that ...". A participle ("can it be used
        # to ...") keeps "it" referential, and so does a tough adjective whose infinitive has a
        # gap: "is it easy to pair?" asks about the thing; "is it easy to pair a TV?" does not.
        to = after.index("to") if "to" in after[1:5] else None
        if after[1] in {"that", "whether"}:
            return True
        if to is not None and after[1] in {"to", "for"}:
            if head not in _TOUGH:
                return True
            obj = m.toks[i + 1 + skip + to + 2] if i + 1 + skip + to + 2 < len(m.toks) else None
            return obj is not None and (obj.content or obj.named or obj.low in _DET)
    if head in {"take", "takes", "took", "cost", "costs"}:
        return "to" in after
    return head in _IMPERSONAL


def _pronouns(m: _Message) -> Iterator[Cue]:
    for i, t in enumerate(m.toks):
        if t.low not in _PERSONAL:
            continue
        if t.low == "it" and _expletive_it(m, i):
            continue
        if m.antecedent_before(i) or m.anchor_after(i):
            continue
        yield f"pronoun:{t.low}", f"pronoun '{t.text}' with no antecedent in the message"


def _demonstratives(m: _Message) -> Iterator[Cue]:
    for i, t in enumerate(m.toks):
        w, nxt = t.low, m.at(i + 1)
        if (w == "this" and nxt in _DEICTIC_TIME) or (w == "these" and nxt == "days"):
            continue  # the time of speaking
        if w == "those" and nxt in {"who", "which", "that", "of", "whose"}:
            continue  # "those who ...": defined by the relative clause
        # "that" is a demonstrative only where a complementiser cannot be: before "one(s)" or
        # at the end of a clause ("which tips do I need for that?").
        if w in {"this", "these", "those"} or (w == "that" and (nxt in {"one", "ones", ""} or nxt in _CLAUSE_PUNCT)):
            if not m.antecedent_before(i):
                yield f"demonstrative:{w}", f"demonstrative '{t.text}' points at something said before"


def _pro_forms(m: _Message) -> Iterator[Cue]:
    for i, t in enumerate(m.toks):
        w, prev, nxt = t.low, m.at(i - 1), m.at(i + 1)
        # Locative "there" (not the existential next to a copula) and "nearby" need a place.
        if w == "there" and prev not in _BE and nxt not in _BE and nxt not in {"exist", "exists", "seem", "seems"}:
            yield "pro-form:there", "'there' stands for a place named before"
        elif w == "nearby":
            yield "pro-form:nearby", "'nearby' is relative to a place named before"
        # "one(s)" after a determiner or adjective, with no noun after it, replaces a noun.
        elif w == "ones" or (
            w == "one"
            and (prev in {"the", "that", "this", "which", "a", "an", "each"} or (i > 0 and m.toks[i - 1].content))
            and (not nxt or nxt in _CLAUSE_PUNCT or nxt in _PREP or nxt in _AUX)
        ):
            yield f"pro-form:{w}", f"'{t.text}' stands for a noun said before"
        # A quantifier with no noun after it ("are there any related to X?", "how many are there?").
        elif (
            w in _QUANTIFIER
            and prev not in _ARTICLE
            and (not nxt or nxt in _CLAUSE_PUNCT or nxt in _AUX or (nxt in _PREP and nxt != "of") or nxt.endswith("ed"))
        ):
            if w != "all" and not m.antecedent_before(i):
                yield f"pro-form:{w}", f"'{t.text}' with no noun: the noun was said before"


def _openers(m: _Message) -> Iterator[Cue]:
    words = m.words
    first = words[0].low
    second = words[1].low if len(words) > 1 else ""
    if first in _OPENERS:
        yield f"opener:{first}", f"starts with '{words[0].text}', continuing an earlier turn"
    if (first, second) in _OPENER_PAIRS:
        yield f"opener:{first} {second}", f"'{words[0].text} {words[1].text}' refers back to an earlier turn"
    if words[-1].low in _FINAL_PARTICLES or [w.low for w in words[-2:]] == ["as", "well"]:
        yield f"particle:{words[-1].low}", f"'{words[-1].text}' presupposes something said before"
    if len(words) <= _SHORT or not any(t.content or t.named for t in words):
        yield "short", f"{len(words)} word(s) and nothing for the message to be about"


def _presupposed_sets(m: _Message) -> Iterator[Cue]:
    for i, t in enumerate(m.toks):
        w, prev, nxt = t.low, m.at(i - 1), m.at(i + 1)
        if w == "else" or (
            w in {"other", "others", "another"} and nxt != "than" and prev not in {"each", "one", "the"}
        ):
            yield f"set:{w}", f"'{t.text}' presupposes a set mentioned before"
        # "Tell me more (about X)": more than what was already said.
        elif w == "more" and (not nxt or nxt in _CLAUSE_PUNCT or nxt in {"about", "on"}):
            yield "set:more", "'more' presupposes what was said before"
        # Bare "which" picks from alternatives given before ("Which is cheaper?").
        elif (
            w == "which"
            and (i == 0 or prev in _CLAUSE_PUNCT or prev in {"and", "but", "or"})
            and (nxt in _AUX or nxt == "one")
        ):
            yield "set:which", "'which' chooses among alternatives given before"


def _relations(m: _Message) -> Iterator[Cue]:
    for i, t in enumerate(m.toks):
        w = t.low
        if w in _RELATION_NOUN:
            two_terms = m.after(i, ("between",)) or (m.after(i, ("of",)) and m.after(i, ("with", "to", "from", "and")))
            if two_terms or m.coordinated or m.at(i - 1) in _POSSESSIVE:
                continue
            yield f"relation:{w}", f"'{t.text}' relates two things and the message names at most one"
        elif (
            w in _PART_IN
            and not m.after(i, ("in", "to", "within", "for", "on"))
            and m.at(i - 1) not in _POSSESSIVE
        ):
            yield f"relation:{w}", f"'{t.text}' is a part in something the message does not name"
        elif w in _RELATION_PRED and not m.toks[min(i + 1, len(m.toks) - 1)].content:
            # Attributive "different types of X" means "various"; only the predicate is relational.
            if any(x in _STANDARD for x in m.low[i + 1 : i + 4]) or m.coordinated:
                continue
            yield f"relation:{w}", f"'{t.text}' needs a second term the message does not give"


def _comparatives(m: _Message) -> Iterator[Cue]:
    """A comparative with no "than" ("Is the Lite cheaper?") compares with something said before.
    Only a clause-final "-er" word after a copula or a degree word, or after the subject of a
    yes/no question, counts: elsewhere "-er" words are mostly nouns ("charger", "order")."""
    if "than" in m.last or not m.words:
        return
    # "Is [the] <subject words> cheaper?": a copula first, then only the subject before it, which
    # starts at `first` and runs up to the first token that is neither content nor named.
    first = 2 if m.at(1) in _ARTICLE | {"this", "that", "these", "those"} else 1
    subject_end = next((k for k in range(first, len(m.toks)) if not (m.toks[k].content or m.toks[k].named)), len(m.toks))
    for i, t in enumerate(m.toks):
        w, prev, nxt = t.low, m.at(i - 1), m.at(i + 1)
        if not (t.word and not t.named and w.endswith("er") and len(w) > 4 and (not nxt or nxt in _CLAUSE_PUNCT)):
            continue
        inverted = m.low[0] in _BE and first < i <= subject_end
        if prev in _BE or prev in _DEGREE or inverted:
            yield f"comparative:{w}", f"'{t.text}' than what? the message does not say"


def _anchorless(m: _Message) -> Iterator[Cue]:
    """Descriptions that need an anchor: skipped when the message names a catalog product.

    Noun phrases are read by position (`noun_phrase_end`, `names_in`), and a cue is worded only
    the first time its key comes up (the gate keeps the first reason for a key): a phrase can be
    as long as the message, and wording it again for every "the" before it would be quadratic."""
    if m.anchors:
        return
    said: set[str] = set()
    for i, t in enumerate(m.toks):
        w, prev = t.low, m.at(i - 1)
        if w == "the":
            j = m.noun_phrase_end(i)
            if j == i + 1:
                continue
            first, last = m.low[i + 1], m.low[j - 1]
            # A superlative with nothing after it but "most"/"least" has lost its noun. Words in
            # -est may also be nouns ("the forest in Oregon"): a complement that names something
            # says so.
            superlative = first in _SUPERLATIVE or (first.endswith("est") and not m.completed(j))
            if superlative and (j - i - 1 == 1 or (j - i - 1 == 2 and first in {"most", "least"})):
                # "the cheapest in the range": the superlative's noun was left out, unless a
                # wh-phrase ("which language ... the easiest") or a partitive supplies it.
                if m.at(j) not in {"of", "among"} and not m.restricted_wh and f"ellipsis:{last}" not in said:
                    said.add(f"ellipsis:{last}")
                    yield f"ellipsis:{last}", f"'the {_words(m, i + 1, j)}' leaves out its noun"
            elif (
                not m.names_in(i + 1, j)
                and last not in _UNIQUE
                and first not in _DEICTIC_ORDER
                and not m.completed(j)
                and f"definite:{last}" not in said
            ):
                said.add(f"definite:{last}")
                yield f"definite:{last}", f"'the {_words(m, i + 1, j)}' refers to something the message does not introduce"
        elif w in _CLASSIFIER and m.at(i + 1) != "of" and not (i + 1 < len(m.toks) and m.toks[i + 1].content):
            yield f"classifier:{w}", f"'{t.text}' of what? the message does not say"
        elif w in _DOMAIN_ADJ and prev != "the" and i + 1 < len(m.toks) and m.toks[i + 1].content:
            j = m.noun_phrase_end(i - 1)
            if not m.names_in(i, j) and not m.completed(j):
                yield f"domain:{w}", f"'{t.text}' is relative to a domain the message does not name"
        elif w == "there" and (prev in _BE or m.at(i + 1) in _BE):
            k = i + 1
            while m.at(k) in _BE or m.at(k) in {"any", "some", "a", "an", "no"}:
                k += 1
            j = m.noun_phrase_end(k - 1)
            if not m.names_in(k, j) and not m.completed(j) and (j > k or m.at(k) in _CLAUSE_PUNCT or not m.at(k)):
                yield "existential", "'there is/are' with no place or topic of its own"


def _words(m: _Message, i: int, j: int) -> str:
    return " ".join(x.text for x in m.toks[i:j])


_DETECTORS: tuple[Callable[[_Message], Iterator[Cue]], ...] = (
    _openers,
    _pronouns,
    _demonstratives,
    _pro_forms,
    _presupposed_sets,
    _relations,
    _comparatives,
    _anchorless,
)


# "What is X?", "what does X mean", "define X", "the meaning of X": asking about a term makes it
# the topic. The term must be content words only, so "what is the role of ..." is not one.
# Linear: the end (`\s*[?.!]?\s*$`) is possessive, and the term of "what does X mean" and
# "define X" ends at its first character or after a non-space, so no space run is rescanned
# from each of its positions (the lazy `(.+?)\s+mean` was cubic in a run of spaces: 2,000
# spaces took 14 s). Unlike before, a term never consists of a single space taken from the
# space after "does" or "define" ("what does  mean": no term, so no definition).
_DEFINITIONS = (
    re.compile(
        r"^\s*what\s+(?:is|are|was|were)\s+(?:an?\s+|the\s+)?(\w[\w'-]*(?:\s+\w[\w'-]*){0,2})\s*+(?:[?.!]\s*+)?$",
        re.IGNORECASE,
    ),
    re.compile(r"^\s*what\s+does\s++(?:an?\s++|the\s++)?(.(?:.*?\S)??)\s++mean\s*+(?:[?.!]\s*+)?$", re.IGNORECASE),
    re.compile(r"^\s*define\s++(?:an?\s++|the\s++)?(.(?:.*?\S)??)\s*+(?:[?.!]\s*+)?$", re.IGNORECASE),
    re.compile(r"\b(?:definition|meaning)\s+of\s+(?:an?\s+|the\s+)?(\w[\w'-]*)", re.IGNORECASE),
)


def _asks_definition(text: str) -> bool:
    for pattern in _DEFINITIONS:
        found = pattern.search(text)
        if found and all(w.lower() not in _FUNCTION for w in found.group(1).split()):
            return True
    return False


# A conversation of greetings and thanks has no topic to continue (stemmed, as `analyze` gives them).
_PLEASANTRIES = frozenset(analyze("hi hello hey thanks thank cheers ok okay great good morning afternoon evening bye goodbye please welcome", stopwords=False))


def _continues_topic(m: _Message, history: Sequence[str]) -> Iterator[Cue]:
    """Topic continuity: a conversation keeps its topic until a message introduces a new one, and
    new topics come with something to name them. A message that names nothing (no product, no
    proper name, no number), repeats no content word of the conversation and asks for no
    definition is taken to continue the topic. A weak cue: in a help centre users also change
    subject without names ("what is the return window for opened earbuds?")."""

    def stems(text: str) -> set[str]:
        # The content words of `_Message(text, ()).toks`, without building the message (each
        # distinct word is stemmed once).
        lows = (found.group(0).lower() for found in _TOKEN.finditer(text.replace("\u2019", "'").replace("\u2018", "'")))
        content = {w for w in lows if (w[0].isalnum() or w[0] == "'") and w not in _FUNCTION and not w.isdigit()}
        return set(analyze(" ".join(content), stopwords=False))

    if m.anchors or any(t.named for t in m.toks) or _asks_definition(m.text):
        return
    if any(t.low in _PERSONAL and m.antecedent_before(i) for i, t in enumerate(m.toks)):
        return  # its pronouns resolve inside it: it carries its own topic
    own = stems(" ".join(t.text for t in m.toks))
    topic = set().union(*(stems(turn) for turn in history)) - _PLEASANTRIES
    if own and topic and not own & topic:
        yield "continuity", "names nothing and repeats no word of the conversation: taken to continue its topic"


def check_follow_up(
    message: str,
    history: Sequence[str],
    *,
    catalog: Catalog | None = None,
) -> FollowUp:
    """Whether `message` needs the earlier turns to be understood, and the words that say so.

    A cue in the message's own words is "strong". Failing that, a message that names nothing
    and repeats nothing of the conversation is taken to continue its topic (see
    `_continues_topic`): a "weak" verdict, on which the plan searches the standalone form next
    to the message as typed.

    >>> check_follow_up("does it cover water damage?", ["Is the Solace 7 warranty 18 months?"]).reason
    "pronoun 'it' with no antecedent in the message"
    """
    if not history:
        return FollowUp(False, "first turn: there is no history to depend on")
    if len(message) > ANALYSIS_CHARS:  # (and the gate's work stays bounded whatever the limits)
        return FollowUp(False, f"a message of {len(message):,} characters stands alone (the gate reads up to {ANALYSIS_CHARS:,})")
    anchors = [(x.start, x.end) for x in catalog.mentions(message)] if catalog is not None else []
    m = _Message(message, anchors, catalog=catalog is not None)
    if not m.words:
        return FollowUp(False, "empty message: nothing to resolve")
    cues: dict[str, str] = {}
    for detect in _DETECTORS:
        for key, why in detect(m):
            cues.setdefault(key, why)
    strength: Literal["strong", "weak"] = "strong"
    if not cues:
        cues.update(_continues_topic(m, analysed_history(history)))
        strength = "weak"
    if not cues:
        return FollowUp(False, "no reference outside the message: searched as typed")
    return FollowUp(True, "; ".join(cues.values()), tuple(cues), strength)


def concat_standalone(message: str, history: Sequence[str]) -> str:
    """The previous user turn, a space, then the message: the deterministic standalone form.
    A turn without closing punctuation gets a full stop, so that no name seems to run across
    the join ("Yes" + "How can I ..." is not a "Yes How").

    >>> concat_standalone("And the Pro?", ["Warranty on the Solace 7?"])
    'Warranty on the Solace 7? And the Pro?'
    >>> concat_standalone("How can I request?", ["Yes"])
    'Yes. How can I request?'
    """
    if not history:
        return message
    previous = history[-1].strip()
    if previous and previous[-1] not in ".?!;:":
        previous += "."
    return f"{previous} {message.strip()}"
