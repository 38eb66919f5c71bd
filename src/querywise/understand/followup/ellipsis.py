"""Ellipsis: a follow-up that is an opener and a noun phrase ("And the Pro?", "what about
unopened ones?") or a prepositional phrase ("and in Japan?") asks the previous question again, of
the new thing or with the new circumstance. `referent.resolve` calls `ellipsis` for a message the
gate read as an opener, with the previous user turn as resolved."""

from __future__ import annotations

import re

from querywise.catalog import Catalog
from querywise.understand.followup.message import ADJECTIVE_ENDINGS, DOMAIN_ADJ, PARTICIPLES, PERSON_NOUNS, WH
from querywise.understand.followup.tracker import Referent, Standalone, Tracker

__all__ = ["ABOUT", "ELLIPSIS_CHARS", "PP_ONLY", "ellipsis"]

#: The longest message read as an opener and one noun phrase ("And the Pro?").
ELLIPSIS_CHARS = 120
# A fragment that is a preposition and its object ("and in Japan?", "And for a half?", "Only for
# girls?") adds to the previous question, or swaps the object of the same preposition there.
_PP_PREPS = frozenset(["for", "with", "in", "on", "to", "at", "after", "before", "during", "without", "from", "by", "under", "over", "since"])
# "for", "with", "to" ask the question again of another thing ("What about for a food truck?" after
# the Lamborghini's price): the fragment's noun swaps in as any ellipsis's does. Adding such a phrase
# to the frame instead ("Are there any film festivals for jazz?") lost CAsT 2019 0.008 precision.
# A class of people after them ("what about for women?") is added all the same (`_of_people`).
_SWAP_PREPS = frozenset(["for", "with", "to"])
# A prepositional phrase that opens a clause ("in which ...", "for whether ...") is no ellipsis.
_CLAUSE_OPENERS = WH | {"whether", "if"}
# "And the Pro?", "what about unopened ones in particular?": an opener, a noun phrase, a tail that
# adds nothing to ask. Anything else ("and what is the process?") is a question of its own.
_REACTION = r"(?:(?:interesting|ok|okay|oh|great|cool|wow|nice|i see)\W+)?"
# "What about ...?" after a reaction ("Interesting. What about a food truck?"): an opener the gate
# may read as continuity only.
ABOUT = re.compile(rf"^\s*{_REACTION}(?:what|how)\s+about\b", re.IGNORECASE)
_ELLIPSIS = re.compile(
    rf"^\s*{_REACTION}(?:(?:no\W+)?i\s+mean[t]?\s+)?(?:(?:and|but|or|also|so)\s+)?(?:(?:what|how)\s+about\s+|(?:the\s+)?same\s+)?(?P<pp>(?P<adverb>(?:only|just|even|especially|mainly|mostly)\s+)?"
    rf"(?P<prep>{'|'.join(sorted(_PP_PREPS))})\s+)?(?P<np>.+?)"
    r"(?:,?\s+(?:in particular|instead|then|too|as well|though|now))?\s*[?.!]*\s*$",
    re.IGNORECASE,
)
# A message that is only a prepositional phrase ("Only for girls?"): an ellipsis with no opener.
PP_ONLY = re.compile(rf"^\s*(?:(?:only|just|even|especially|mainly|mostly)\s+)?(?:{'|'.join(sorted(_PP_PREPS))})\s+(?!(?:{'|'.join(sorted(_CLAUSE_OPENERS))})\b)[^\W\d][^,;:?.!]{{0,40}}[?.!]*\s*$",
                      re.IGNORECASE)
# An ordinal is a modifier a pro-form's own replaces: "the second one" after "their first album".
_ORDINAL_WORDS = frozenset(["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "last", "next", "previous",
                           "latest"])
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_PEOPLE_PLURALS = {"women": "woman", "men": "man", "children": "child", "people": "person"}


def _of_people(np: str) -> bool:
    """Whether a swap preposition's noun phrase is a class of people ("for women", "with
    children"): whom the question is asked for, a circumstance added to the previous question,
    never the thing its subject was ("What changes did he make?" + "what about for women?" is not
    "What changes did women make?": dialogues_train_9)."""
    words = np.strip(" ?.!").lower().split()
    head = words[-1] if words else ""
    return _PEOPLE_PLURALS.get(head, head) in PERSON_NOUNS or (head.endswith("s") and head[:-1] in PERSON_NOUNS)


def ellipsis(message: str, previous: str, tracker: Tracker) -> Standalone | None:
    """The previous question about the new subject: "And the Pro?" after "How long is the
    warranty on the Halden Solace 7?" asks "How long is the warranty on the Halden Solace 7 Pro?";
    "what about unopened ones?" after "What's the return window for earbuds?" asks it of unopened
    earbuds. What gives way in the previous question: a referent sharing a word with the new one
    ("the cons" for "the pros and cons"), else one of the same sort (a product for a product, a
    pro-form's noun of its number), else its topic. A phrase of place or time ("and in Japan?") is
    added to the previous question instead (`_added_phrase`). None when the message is more than an
    opener and a noun phrase, or when nothing in the previous question can give way."""
    # An ellipsis is a few words; the bound also keeps the pattern's work small on any message.
    found = _ELLIPSIS.match(message) if len(message) <= ELLIPSIS_CHARS else None
    if found is None:
        return None
    same = re.search(r"\bsame\b", message[: found.start("np")], re.IGNORECASE) is not None  # "same for the Pro": the question asked again
    # A phrase is a few words, not a clause after a dash or a comma ("without machines -- like how did they ...?").
    phrase = bool(found.group("prep")) and not same and found.group("np").split()[0].lower() not in _CLAUSE_OPENERS and not re.search(
        r"[,;:\u2013\u2014]|\s-\s", found.group("np")) and not any(
        r.kind == "entity" for r in tracker.mentions(found.group("np")))
    if phrase and (found.group("prep").lower() not in _SWAP_PREPS or _of_people(found.group("np"))):
        return _added_phrase(previous, found, tracker)
    return _swapped(message, previous, tracker, found)


def _swapped(message: str, previous: str, tracker: Tracker, found: re.Match[str]) -> Standalone | None:
    """`_ellipsis` for a noun phrase (`found`'s np): what in the previous question it replaces."""
    said = _LEADING_ARTICLE.sub("", found.group("np").strip())
    olds = tracker.mentions(previous)
    pro_form = re.fullmatch(r"(?P<mods>(?:[\w-]+\s+){1,3})(?P<one>ones?)", said, re.IGNORECASE)
    if pro_form is not None:  # "unopened ones": the previous question's noun, so modified
        plural = pro_form.group("one").lower() == "ones"
        for old in olds:
            if old.kind == "phrase" and old.plural == plural and (at := _span(previous, old, None)) is not None:
                text = f"{pro_form.group('mods')}{_noun_of(_LEADING_ARTICLE.sub('', old.text))}"
                ordinal = re.search(r"\b(\w+)\s+$", previous[: at[0]])
                if ordinal and ordinal.group(1).lower() in _ORDINAL_WORDS and set(pro_form.group("mods").lower().split()) & _ORDINAL_WORDS:
                    at = (ordinal.start(1), at[1])  # "the second one" after "their first album": the ordinal gives way too
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
    # A definite noun phrase with no word in common ("What about the lead problem?", "the tongue
    # twister") is a part or an aspect of the subject, already given: it does not replace the
    # subject, as an indefinite one does ("a pimped-out food truck" for "a used Lamborghini").
    fresh = not (re.match(r"(?:the|this|that|these|those)\s", found.group("np").strip(), re.IGNORECASE))
    if not sharing and subject.kind == "phrase" and fresh and current is not None and any(r.key == current.key for r in asked):
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


def _added_phrase(previous: str, found: re.Match[str], tracker: Tracker) -> Standalone:
    """The previous question with the fragment's prepositional phrase: in place of what the same
    preposition governs there ("Where would I adopt one in Scotland?" + "And in Ireland?" -> "...
    in Ireland?"), else added at the end of its question ("How much does Montessori school usually
    cost?" + "and in Japan?" -> "... usually cost in Japan?"). A phrase adds a circumstance to the
    old frame; it never takes the place of the frame's subject ("How much does Japan cost?")."""
    prep, np = found.group("prep"), found.group("np").strip()
    phrase = previous.rstrip()
    new = tracker.mentions(np)
    for old in tracker.mentions(previous):
        at = _span(previous, old, tracker.catalog)
        if at is None or _after_question(previous, at[0]):
            continue
        governed = re.search(rf"\b{re.escape(prep)}\s+(?:(?:the|a|an)\s+)?$", previous[: at[0]], re.IGNORECASE)
        if governed is not None:
            text = previous[: governed.start()] + f"{prep} {np}" + previous[at[1] :]
            form = Standalone(text, "ellipsis", tuple(new), f"the previous question with '{prep} {np}' (in place of {old.text!r})")
            break
    else:
        end = re.search(r"[?.!]", phrase)  # the question's own end: a subject a form appended stays after it
        cut = end.start() if end is not None else len(phrase)
        text = f"{phrase[:cut].rstrip()} {(found.group('adverb') or '').lower()}{prep} {np}{phrase[cut:]}"
        form = Standalone(text, "ellipsis", tuple(new), f"the previous question with '{prep} {np}' added")
    # "And in winter?" after "How long does recovery take afterwards?": still about the marathon.
    return tracker.with_subject(form, {r.key for r in new}, any(r.kind != "phrase" for r in new))


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
    return word.endswith(("ed", *ADJECTIVE_ENDINGS, "less")) or word in PARTICIPLES or word in DOMAIN_ADJ or word in _ORDINAL_WORDS


def _span(text: str, referent: Referent, catalog: Catalog | None) -> tuple[int, int] | None:
    """Where `text` says `referent`: a product by any of its names, anything else as written."""
    if referent.kind == "entity" and catalog is not None:
        return next(((m.start, m.end) for m in catalog.mentions(text) if [e.id for e in m.entities] == [referent.key[1]]), None)
    at = text.find(referent.text)
    return None if at < 0 else (at, at + len(referent.text))
