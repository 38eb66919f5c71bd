"""A message as the follow-up gate reads it: tokens with their word classes, and the
indexed lookups the detectors share (clauses, antecedents, noun phrases, anchors)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from functools import cached_property

# --- closed classes of English ----------------------------------------------------------------


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Third-person personal pronouns point at something said before; first and second person point
# at the speakers, who never need resolving.
PERSONAL = _set("it its itself they them their theirs themselves he him his himself she her hers herself")
POSSESSIVE = _set("its their his her")
BE = _set("is are was were be been being am 's 're 'm")
AUX = BE | _set("do does did can could will would shall should may might must has have had 've 'd 'll ca wo")
#: Question words; one set for every reader, so the gate and the forms agree on what opens a question.
WH = _set("what why how where when who whom whose which")
PREP = _set(
    "of for on in at from to with about between among during after before around under over into onto "
    "across through without within against toward towards than as by via like per near versus vs "
    "along beside beneath behind beyond upon despite amid"
)
ARTICLE = _set("the a an")
#: Number words of a plural count ("*two* of them", "*both* options").
COUNT_WORDS = _set("two three four five six seven eight nine ten both")
#: The speaker in the first person: whose situation a turn states (`gate.py`'s situation cue, `situation.py`).
FIRST_PERSON = _set("i my mine we us our ours")
# The speakers anchor what they own or do: "the limit on my card", "the accent you use".
_SPEAKERS_POSSESSIVE = _set("my our your")
_SPEAKERS_SUBJECT = _set("i we you")
_PERSONAL_SUBJECT = _set("he she they")
_SINGULAR = _set("it its itself")
DET = ARTICLE | _set("this that these those my your our his her its their some any no every each another")
QUANTIFIER = _set("some any both either neither none each several many few all")
FUNCTION = (
    PERSONAL
    | AUX
    | WH
    | PREP
    | ARTICLE
    | QUANTIFIER
    | _set(
        "this that these those such no not n't i me my mine myself we us our ours you your yours yourself "
        "one ones and or but nor so if then there here yes also too very really just only even still "
        "already else more most less least much other others another same own please thanks thank ok okay "
        "ever generally tell give show explain describe know let get got"
    )
)
# Nouns whose definite form is unique in any situation ("the world", "the summer"): the article
# needs no earlier mention.
UNIQUE = _set(
    "world earth sun moon sky universe internet web weather environment economy past present future "
    "public morning afternoon evening night day weekend week month year summer winter spring autumn "
    "fall time moment beginning end"
)
# After "this", these anchor it to the time of speaking, not to an earlier turn.
DEICTIC_TIME = _set(
    "year week month morning afternoon evening weekend season summer winter spring autumn fall century decade time moment"
)
# Verbs whose subject "it" is impersonal: "it seems that", "what does it mean", weather.
IMPERSONAL = _set("mean means matter matters depend depends seem seems appear appears raining snowing rains snows")
TIME_NOUNS = _set("time day date")
GREETINGS = _set("hi hello hey")
# Adjectives of possibility and obligation, which extrapose a clause: "is it possible for ...".
MODAL_ADJ = _set("possible impossible necessary mandatory required allowed legal okay ok true likely")
# Tough-movement adjectives: in "is it easy to learn?" the infinitive has a gap that "it" fills,
# so "it" refers; after other adjectives "is it ... to" is an expletive ("is it possible to").
TOUGH = _set(
    "easy easier easiest hard harder hardest difficult tough tougher simple simpler fun safe safer cheap cheaper expensive"
)
# Two-place relations need two terms; a message that gives one leaves the other to the context.
RELATION_NOUN = _set(
    "difference differences similarity similarities relationship relation relations connection link comparison"
)
# A role or a contribution is one thing's part *in* another, an impact one thing's effect *on*
# another: "the role of X", "the impact of X" leave the other out.
PART_IN = _set("role roles contribution contributions impact impacts")
RELATION_PRED = _set("different differ differs compare compared compares similar alike related relate comparable")
STANDARD = _set("from than to with as versus vs between")
# Classifier nouns are relational: a type is a type *of* something. As a head without "of"
# ("what kind do I need?") the something is whatever the conversation is about.
CLASSIFIER = _set(
    "kind kinds type types sort sorts variety varieties category categories class classes form forms "
    "example examples version versions model models member members part parts style styles"
)
# Adjectives relative to a domain ("popular" where? "main" among what?): in front of a noun with
# no complement, the domain is the conversation's.
DOMAIN_ADJ = _set(
    "main key major important popular common typical famous notable primary principal leading basic usual standard traditional"
)
SUPERLATIVE = _set("best worst first last most least next")
# Ordered relative to the moment of speaking ("the next song", "the last input"), not to a turn.
DEICTIC_ORDER = _set("next last previous current latest default")
# Degree words before a comparative ("much cheaper", "any better").
DEGREE = _set("much any even far way slightly bit lot no")
OPENERS = _set("and but or also plus even")
# An interjection that opens a message reacts to what was just said ("Oh, IP addresses count?").
INTERJECTIONS = _set("oh ah ooh wow")
OPENER_PAIRS = {("what", "about"), ("how", "about"), ("if", "so"), ("if", "not"), ("why", "not"), ("same", "for")}
# Additive and substitutive particles presuppose an earlier statement ("the Lite too?").
FINAL_PARTICLES = _set("too instead either")
# Complements that complete a noun phrase on their own: "the return window for X", "the one that".
_COMPLEMENT = _set("of for about between among that which who whom whose where 's")

# A word is letters and digits of any script ("García Márquez", "Valparaíso"): an ASCII-only class
# cut a name at its first accented letter.
TOKEN = re.compile(
    r"[^\W_]+(?=n't\b)|n't\b|[^\W_]+(?:[-./][^\W_]+)*|'(?:s|re|ve|d|ll|m)\b|[^\s\w]|_"
)
CLAUSE_PUNCT = _set(". ? ! ; : ,")
# Abbreviated titles whose full stop ends no sentence: the name goes on after it ("The Cabinet of
# *Dr.* Caligari", "*St.* Petersburg").
TITLE_ABBREVIATIONS = frozenset(["Dr", "St", "Mr", "Mrs", "Ms", "Mt", "Prof", "Rev", "Fr", "Gen", "Capt", "Lt", "Sgt"])
_SENTENCE_END = _set(". ? !")
SHORT = 2
# An opening remark on what was said: "It sounds like ...", "That seems ...", "This looks ...".
_REMARK_SUBJECT = _set("it that this")
_REMARK_VERB = _set("sounds sound seems seem looks look feels feel")


class _Tok:
    """One token, with its word classes worked out once (the detectors ask them per token)."""

    __slots__ = ("content", "initial", "low", "named", "start", "text", "word")

    def __init__(self, text: str, low: str, start: int, initial: bool = False) -> None:
        self.text, self.low, self.start = text, low, start
        self.initial = initial  # first word of a sentence, capitalised by spelling rules only
        self.word = low[0].isalnum() or low[0] == "'"
        self.content = self.word and low not in FUNCTION and not low.isdigit()
        # Part of a name ("Solace 7", "the 321 method"): a digit, or a capital that sentence
        # spelling does not explain; an acronym ("US", "ACL") even when it spells a function word.
        self.named = self.word and (
            (len(text) > 1 and text.isupper())
            or (low not in FUNCTION and (any(c.isdigit() for c in text) or (text[0].isupper() and not initial)))
        )

    def __repr__(self) -> str:
        return f"_Tok({self.text!r}, {self.start})"


class Message:
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
        for found in TOKEN.finditer(text):
            raw = found.group(0)
            tok = _Tok(raw, raw.lower(), found.start(), initial and raw[0].isalnum())
            self.toks.append(tok)
            after_title = tok.low == "." and len(self.toks) > 1 and self.toks[-2].text in TITLE_ABBREVIATIONS
            initial = (tok.low in _SENTENCE_END and not after_title) or (initial and not tok.word)
        self.low = [t.low for t in self.toks]
        self.words = [t for t in self.toks if t.word]
        # Catalog mentions anchor a message: they are what its descriptions and pronouns are
        # about. Without a catalog, a run of name words can still be a pronoun's referent.
        self.anchors = list(anchors)
        self.referents = list(anchors) if catalog else self._name_runs()
        self.clause_starts = self._clause_starts()
        # Where each word last occurs; the first token that is content or named (len: none).
        self.last = {w: i for i, w in enumerate(self.low)}
        self.remark_end = self._remark_end()
        self.first_topic = next((i for i, t in enumerate(self.toks) if (t.content or t.named) and i >= self.remark_end), len(self.toks))

    def _remark_end(self) -> int:
        """Where the message's opening remarks end: sentences like "It sounds like a lot of work."
        or "That seems expensive.", whose "it" is no pointer and whose nouns are what the user
        thinks of the answer, never what the next sentence's "it" stands for ("How long can I keep
        it in the fridge?" still needs the conversation). 0 when the message opens with none."""
        end, k = 0, 0
        while k + 1 < len(self.low) and self.low[k] in _REMARK_SUBJECT and self.low[k + 1] in _REMARK_VERB:
            stop = next((j for j in range(k, len(self.low)) if self.low[j] in _SENTENCE_END), None)
            if stop is None or stop + 1 >= len(self.low):
                break  # the remark is the whole message: its nouns are all there is
            end = k = stop + 1
        return end

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
            # "X, and why is it ...", "X and its Y", a second verb with its own object ("move
            # the money and put it ..."), and a new subject ("my income changed and I ...").
            coordinator = w in {"and", "but", "or", "so", "then"}
            if w in CLAUSE_PUNCT or (
                coordinator and (nxt in WH or nxt in AUX or nxt in PERSONAL or nxt in _SPEAKERS_SUBJECT or self.at(i + 2) in PERSONAL)
            ):
                starts.append(i + 1)
        return starts

    def antecedent_before(self, i: int) -> bool:
        """A noun in an earlier clause can be the referent (a pronoun cannot take one from its own
        clause); so can the first conjunct of "X and its Y"."""
        clause = self.clause_starts[bisect.bisect_right(self.clause_starts, i) - 1]
        if clause > 0 and self.first_topic < clause:
            # A pronoun agrees in number: "it" cannot take "flavors" ("Besides inventive flavors,
            # what made it successful?"), the head of the clause before it.
            return not (self.low[i] in _SINGULAR and self._plural_head_before(clause))
        return self.at(i - 1) == "and" and self.low[i] in POSSESSIVE and i >= 2 and self.toks[i - 2].content

    def clause_end(self, i: int) -> int:
        """Where the clause holding position `i` ends (the next clause's start, or the end)."""
        k = bisect.bisect_right(self.clause_starts, i)
        return self.clause_starts[k] if k < len(self.clause_starts) else len(self.toks)

    def _plural_head_before(self, clause: int) -> bool:
        """Whether the last content word before `clause` (the head of its noun phrase) is a plural
        common noun by its ending."""
        head = next((t for t in reversed(self.toks[:clause]) if t.content or t.named), None)
        return head is not None and not head.named and head.low.endswith("s") and not head.low.endswith(("ss", "us", "is"))

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
            if not (self.low[k] in ARTICLE or t.named):
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
        return nxt in PREP and any(t.named or t.low in _SPEAKERS_POSSESSIVE for t in following)

    def locative_there(self, i: int) -> bool:
        """Whether token `i` is a "there" that stands for a place ("restaurants there"): not the
        existential next to a copula ("is there a deadline?"), not "hi there"."""
        prev, nxt = self.at(i - 1), self.at(i + 1)
        return self.low[i] == "there" and prev not in BE and prev not in GREETINGS and nxt not in BE and nxt not in {"exist", "exists", "seem", "seems"}

    @cached_property
    def coordinated(self) -> bool:
        """Two content words joined by "and"/"or": a relation gets both of its terms."""
        return any(
            self.low[i] in {"and", "or"}
            and self.toks[i - 1].content
            and (self.toks[i + 1].content or self.low[i + 1] in ARTICLE)
            for i in range(1, len(self.toks) - 1)
        )

    @cached_property
    def restricted_wh(self) -> bool:
        """True for "which language ...", "what type ...": the wh-phrase supplies a head noun."""
        return any(self.low[i] in {"which", "what"} and self.toks[i + 1].content for i in range(len(self.toks) - 1))


# The referent tracker's word lists (`tracker.py`, `referent.py`).
# Greetings and the words of asking itself ("Good afternoon", "I have questions", "tell me
# something"): no conversation is about them, so no pronoun takes them.
CHAT = frozenset(
    ["hello", "hi", "hey", "good", "morning", "afternoon", "evening", "day", "thanks", "thank", "cheers", "bye", "goodbye", "welcome", "something", "anything", "everything", "nothing", "question", "questions", "help", "information", "info", "thing", "things", "stuff"]
)
# Words that react rather than name ("Oh almonds?", "Interesting. What about ..."): never the start of a referent.
REACTIONS = frozenset(["oh", "ah", "wow", "ok", "okay", "hmm", "interesting", "cool", "great", "yes", "no", "yeah", "well"])
ADJECTIVE_ENDINGS = ("ible", "able", "ous", "ful", "ive", "ent", "ant")
IRREGULAR_PLURALS = frozenset(["people", "children", "men", "women", "police", "cattle", "data", "media", "feet", "teeth", "mice", "geese"])
# Irregular past participles: a verb at the edge of a run ("what is Herbert Spencer *known* for").
PARTICIPLES = frozenset(
    ["known", "shown", "grown", "taken", "given", "chosen", "written", "eaten", "driven", "seen", "done", "gone", "made", "taught", "bought", "brought", "thought", "caught", "found", "held", "kept", "left", "lost", "meant", "met", "paid", "put", "said", "sent", "sold", "spent", "stood", "told", "understood", "won", "built", "born"]
)
# Nouns that mark their person's sex, a closed class of English (kinship, address, rank): "she" never
# takes "my brother", "he" never "my mom".
FEMALE_NOUNS = frozenset(
    ["woman", "girl", "lady", "queen", "princess", "actress", "wife", "daughter", "mother", "mom", "mum", "mommy", "mummy",
     "sister", "aunt", "auntie", "niece", "grandmother", "grandma", "granny", "granddaughter", "girlfriend", "fiancee", "stepmother",
     "stepdaughter", "stepsister", "widow", "bride", "empress", "duchess", "nun"]
)
MALE_NOUNS = frozenset(
    ["man", "boy", "guy", "king", "prince", "husband", "son", "father", "dad", "daddy", "brother", "uncle", "nephew",
     "grandfather", "grandpa", "grandson", "boyfriend", "fiance", "stepfather", "stepson", "stepbrother", "widower", "groom",
     "emperor", "duke", "monk", "pope"]
)
# Nouns of a class of people: "he" or "she" can take "the leader" as it can a person's name.
PERSON_NOUNS = FEMALE_NOUNS | MALE_NOUNS | frozenset(
    ["person", "president", "leader", "founder", "ceo", "chairman", "owner", "author", "writer", "singer", "actor", "player", "coach", "manager", "director", "inventor", "scientist", "artist", "painter", "composer", "poet", "friend", "doctor", "teacher", "student", "minister", "governor", "senator", "captain", "general", "officer", "soldier", "customer", "user", "employee", "member", "child", "baby", "kid", "parent", "grandparent", "grandchild", "spouse", "partner", "sibling", "cousin",
     # People of a situation (#34): whom a person deals with, never what they ask about.
     "landlord", "landlady", "tenant", "neighbour", "neighbor", "employer", "boss", "colleague", "coworker", "roommate", "flatmate",
     "dealer", "seller", "buyer", "mechanic", "plumber", "builder", "contractor", "lawyer", "solicitor", "accountant",
     "surgeon", "nurse", "dentist", "pharmacist", "therapist", "physiotherapist", "vet", "patient", "client", "agent"]
)
# Prepositions before a place's name: "restaurants *in* Tokyo" names where "there" is.
PLACE_PREP = frozenset(["in", "at", "near", "around", "across", "throughout", "visit", "visiting"])
# The speaker's judgement of a thing, no part of what it is: "the *well-known* researchers".
EVALUATIVE = frozenset(["well-known", "famous", "notable", "interesting", "good", "great", "nice", "favorite", "favourite", "top"])
# Words that are no referent on their own: ordinals and superlatives, domain adjectives,
# classifier and relation nouns ("types", "the difference"), which are relative to a referent.
# Ordinals past "first" and the pair words point at an item ("the second one", "the latter"): a
# pointer, never what another pointer is resolved to.
POINTER_WORDS = _set("second third fourth fifth sixth seventh eighth ninth tenth former latter")
# Heads a question asks *about* something with ("the options for preventing migraines", "the best
# time to visit Kyoto", "ways to save"): relative to what follows them, never its subject.
GENERIC_HEADS = _set("option options way ways thing things time times step steps choice choices alternative alternatives method methods "
                     "approach approaches idea ideas tip tips year years day days lot lots")
NOT_REFERENTS = SUPERLATIVE | DEICTIC_ORDER | DOMAIN_ADJ | CLASSIFIER | RELATION_NOUN | RELATION_PRED | PART_IN | POINTER_WORDS | GENERIC_HEADS | _set("better worse")
