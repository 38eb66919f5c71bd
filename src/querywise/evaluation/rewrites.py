"""Rewrite evaluation: does the follow-up gate flag the messages people rewrote, and does the
guard accept the rewrites people wrote?

A row is `{"history": [...], "message", "standalone"}` where `standalone` is a person's
standalone rewrite of `message` (equal to it when the message already stands alone). A rewrite
*differs* when it is not the message once runs of whitespace are collapsed: a rewrite that only
tidies spaces is not a rewrite.

- `gate_recall`: of the rows a person rewrote, the share the gate flags.
- `gate_precision`: of the rows the gate flags, the share a person rewrote.
- `guard_false_alarm_rate`: of the rows a person rewrote, the share whose rewrite the guard
  rejects (message -> human standalone, with the row's history). Every rejection of a person's
  rewrite is a false alarm by construction; the examples show what the guard objected to.

With a `rewriter` (message, history -> the text searched), the text the pipeline searches is
compared with the person's: the rewriter's output where the gate flags, the message elsewhere
(`plan_rewriter` makes one from a deployment: the plan's standalone query, LLM or not). Besides
exact match and token F1, `added_term_recall` and `added_term_precision` say whether the form
carries what the person added, and only that; `added_by_source` splits them by where the history
said each term (the user's turns, else the last answer, else an earlier answer, else nowhere), so a
low figure says which kind of word the form misses or adds wrongly. With a `baseline` rewriter
(`subject_rewriter`: the conversation's subject + the message), the same two figures for it on the
same rows, so a form is read beside what a trivial one scores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from querywise.catalog import Catalog
from querywise.checks.guard import DEFAULT_IDENTIFIER_PATTERNS, check_rewrite
from querywise.conversation import Turn, TurnError, Turns, as_turns, texts
from querywise.files import InputError, read_jsonl
from querywise.service import QueryWise
from querywise.text import analyze, normalize
from querywise.understand.followup import check_follow_up, conversation_subject

__all__ = [
    "SOURCES",
    "AddedTerms",
    "GateExample",
    "GuardExample",
    "RewriteReport",
    "RewriteRow",
    "Rewriter",
    "differs",
    "evaluate_rewrites",
    "load_rewrite_rows",
    "plan_rewriter",
    "subject_rewriter",
    "token_f1",
]

Rewriter = Callable[[str, Sequence[Turn]], str]
MAX_EXAMPLES = 10
#: Where a term a rewrite adds was said: any user turn (the user's own words come first), else the
#: last assistant turn, else an earlier one, else nowhere in the history.
Source = Literal["user_turns", "last_answer", "earlier_answers", "nowhere"]
SOURCES: tuple[Source, ...] = ("user_turns", "last_answer", "earlier_answers", "nowhere")


class AddedTerms(BaseModel):
    """Added-term counts: terms both the person and the form add, the person adds, the form adds."""

    model_config = ConfigDict(extra="forbid")

    both: int = 0
    person: int = 0
    form: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float | None:
        return _ratio(self.both, self.person)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def precision(self) -> float | None:
        return _ratio(self.both, self.form)


class RewriteRow(BaseModel):
    """One message, the user turns before it (oldest first), and a person's standalone rewrite."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    history: Turns = ()  # earlier turns, oldest first (strings are user turns)
    message: str
    standalone: str


class GateExample(BaseModel):
    """A row the gate got wrong, with what it said."""

    message: str
    previous: str | None  # the last turn of the history, for reading the example
    standalone: str
    reason: str
    cues: list[str]
    strength: str | None = None  # "weak": flagged by topic continuity alone


class GuardExample(BaseModel):
    """A person's rewrite that the guard rejected, and the terms it objected to."""

    message: str
    standalone: str
    lost: list[str]
    invented: list[str]


class RewriteReport(BaseModel):
    """Gate and guard figures on a rewrite file; `.model_dump()` is the JSON form.

    Rates are `None` when their denominator is zero (no rewritten rows, nothing flagged).
    """

    n: int
    n_rewritten: int  # rows whose human rewrite differs from the message
    n_flagged: int  # rows the gate flags
    n_flagged_rewritten: int  # both
    n_flagged_weak: int = 0  # flagged by topic continuity alone (searched next to the message)
    n_flagged_weak_rewritten: int = 0
    gate_recall: float | None
    gate_precision: float | None
    guard_rejected: int  # human rewrites (of the rewritten rows) the guard rejects
    guard_false_alarm_rate: float | None
    exact_match: float | None = None  # only with a rewriter; case and punctuation ignored
    token_f1: float | None = None  # only with a rewriter
    # Only with a rewriter, pooled over every row: of the content terms a person's rewrite adds
    # to the message, the share the searched form holds; of those the form adds, the share the
    # person's rewrite holds (terms: `querywise.text.analyze`, stemmed, stop words out).
    added_term_recall: float | None = None
    added_term_precision: float | None = None
    # The counts behind them, for pooling reports: terms both add, the person adds, the form adds.
    added_terms: tuple[int, int, int] | None = None
    # Only with a rewriter: the same counts split by where the history said each term (`SOURCES`).
    added_by_source: dict[Source, AddedTerms] | None = None
    # Only with a baseline rewriter: its added-term figures on the same rows (gate and all).
    baseline_added_term_recall: float | None = None
    baseline_added_term_precision: float | None = None
    missed: list[GateExample] = Field(default_factory=list)
    false_flags: list[GateExample] = Field(default_factory=list)
    guard_false_alarms: list[GuardExample] = Field(default_factory=list)


def load_rewrite_rows(path: Path | str) -> list[RewriteRow]:
    """Rows of a rewrite JSONL file; errors name the file and line."""
    rows = []
    for line, rec in read_jsonl(path):
        history, message, standalone = rec.get("history", []), rec.get("message"), rec.get("standalone")
        if not isinstance(message, str) or not message.strip():
            raise InputError(path, line, "missing 'message' (a non-empty string)")
        if not isinstance(standalone, str) or not standalone.strip():
            raise InputError(path, line, "missing 'standalone' (a non-empty string)")
        if not isinstance(history, list):
            raise InputError(path, line, "'history' must be a list of earlier turns, oldest first (strings, or {\"role\", \"text\"})")
        try:
            turns = as_turns(history)
        except TurnError as exc:
            raise InputError(path, line, str(exc)) from None
        rows.append(RewriteRow(history=turns, message=message, standalone=standalone))
    if not rows:
        raise InputError(path, None, "no rows")
    return rows


def differs(message: str, standalone: str) -> bool:
    """A person rewrote the message: the texts differ beyond whitespace.

    >>> differs("And the Pro? ", "And  the Pro?"), differs("And the Pro?", "Warranty of the Solace 7 Pro?")
    (False, True)
    """
    return " ".join(message.split()) != " ".join(standalone.split())


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+", normalize(text))


def token_f1(predicted: str, gold: str) -> float:
    """Harmonic mean of token precision and recall (bag of lower-cased words).

    >>> round(token_f1("warranty of the Solace 7", "the Solace 7 warranty length"), 3)
    0.8
    """
    p, g = _tokens(predicted), _tokens(gold)
    if not p or not g:
        return float(p == g)
    common = sum(min(p.count(t), g.count(t)) for t in set(p) & set(g))
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def plan_rewriter(deployment: QueryWise, *, session: Mapping[str, str] | None = None) -> Rewriter:
    """The text a deployment's plan searches for a message: its standalone query (the LLM's, or
    the deterministic form: replacing the message, or searched next to it), else the message."""

    def searched(message: str, history: Sequence[Turn]) -> str:
        plan = deployment.plan(message, history=history, session=session)
        return next((q.text for q in plan.queries if q.kind == "standalone"), message)

    return searched


def subject_rewriter(*, catalog: Catalog | None = None) -> Rewriter:
    """The baseline form: the conversation's subject (`conversation_subject`) after the message."""

    def searched(message: str, history: Sequence[Turn]) -> str:
        subject = conversation_subject(history, catalog=catalog)
        return f"{message.rstrip()} {subject}" if subject else message

    return searched


class _Added:
    """Added-term counts pooled over rows: what a person's rewrite adds to the message, what a
    form adds, and both, by where the history said each term; the totals are their sums."""

    def __init__(self) -> None:
        self.by_source = {s: AddedTerms() for s in SOURCES}

    def add(self, message: str, standalone: str, searched: str, source: Callable[[str], Source]) -> None:
        own = set(analyze(message))
        person_adds, form_adds = set(analyze(standalone)) - own, set(analyze(searched)) - own
        for term in person_adds | form_adds:
            counts = self.by_source[source(term)]
            counts.both += term in person_adds and term in form_adds
            counts.person += term in person_adds
            counts.form += term in form_adds

    @property
    def both(self) -> int:
        return sum(c.both for c in self.by_source.values())

    @property
    def person(self) -> int:
        return sum(c.person for c in self.by_source.values())

    @property
    def form(self) -> int:
        return sum(c.form for c in self.by_source.values())

    @property
    def recall(self) -> float | None:
        return _ratio(self.both, self.person)

    @property
    def precision(self) -> float | None:
        return _ratio(self.both, self.form)


def _sourcer(history: Sequence[Turn]) -> Callable[[str], Source]:
    """term -> where `history` said it (`SOURCES`' order decides a term said in several places)."""
    users = {t for turn in history if turn.role == "user" for t in analyze(turn.text)}
    answers = [turn.text for turn in history if turn.role == "assistant"]
    last = set(analyze(answers[-1])) if answers else set()
    earlier = {t for text in answers[:-1] for t in analyze(text)}

    def source(term: str) -> Source:
        return "user_turns" if term in users else "last_answer" if term in last else "earlier_answers" if term in earlier else "nowhere"

    return source


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def evaluate_rewrites(
    rows: Sequence[RewriteRow],
    *,
    catalog: Catalog | None = None,
    rewriter: Rewriter | None = None,
    baseline: Rewriter | None = None,
    identifier_patterns: Sequence[str] = DEFAULT_IDENTIFIER_PATTERNS,
) -> RewriteReport:
    """Score the follow-up gate and the rewrite guard against people's rewrites.

    >>> rows = [RewriteRow(history=("Warranty on the Solace 7?",), message="And the Pro?",
    ...                    standalone="Warranty on the Solace 7 Pro?")]
    >>> evaluate_rewrites(rows).gate_recall
    1.0
    """
    flagged_rewritten = flagged = rewritten = rejected = weak = weak_rewritten = 0
    missed: list[GateExample] = []
    false_flags: list[GateExample] = []
    alarms: list[GuardExample] = []
    exact: list[float] = []
    f1: list[float] = []
    added, base = _Added(), _Added()
    for row in rows:
        gate = check_follow_up(row.message, row.history, catalog=catalog)
        person = differs(row.message, row.standalone)
        rewritten += person
        flagged += gate.needs_context
        flagged_rewritten += person and gate.needs_context
        weak += gate.strength == "weak"
        weak_rewritten += person and gate.strength == "weak"
        if person != gate.needs_context:
            example = GateExample(
                message=row.message,
                previous=row.history[-1].text if row.history else None,
                standalone=row.standalone,
                reason=gate.reason,
                cues=list(gate.cues),
                strength=gate.strength,
            )
            bucket = missed if person else false_flags
            if len(bucket) < MAX_EXAMPLES:
                bucket.append(example)
        if person:
            guard = check_rewrite(
                row.message, row.standalone, texts(row.history), catalog=catalog, identifier_patterns=identifier_patterns
            )
            if not guard.ok:
                rejected += 1
                if len(alarms) < MAX_EXAMPLES:
                    alarms.append(
                        GuardExample(
                            message=row.message,
                            standalone=row.standalone,
                            lost=list(guard.lost),
                            invented=list(guard.invented),
                        )
                    )
        if rewriter is None and baseline is None:
            continue
        source = _sourcer(row.history)  # where each added term was said, for both forms' counts
        if rewriter is not None:
            searched = rewriter(row.message, row.history) if gate.needs_context else row.message
            exact.append(float(" ".join(_tokens(searched)) == " ".join(_tokens(row.standalone))))
            f1.append(token_f1(searched, row.standalone))
            added.add(row.message, row.standalone, searched, source)
        if baseline is not None:
            base.add(row.message, row.standalone, baseline(row.message, row.history) if gate.needs_context else row.message, source)
    return RewriteReport(
        n=len(rows),
        n_rewritten=rewritten,
        n_flagged=flagged,
        n_flagged_rewritten=flagged_rewritten,
        n_flagged_weak=weak,
        n_flagged_weak_rewritten=weak_rewritten,
        gate_recall=_ratio(flagged_rewritten, rewritten),
        gate_precision=_ratio(flagged_rewritten, flagged),
        guard_rejected=rejected,
        guard_false_alarm_rate=_ratio(rejected, rewritten),
        exact_match=sum(exact) / len(exact) if exact else None,
        token_f1=sum(f1) / len(f1) if f1 else None,
        added_term_recall=added.recall if rewriter is not None else None,
        added_term_precision=added.precision if rewriter is not None else None,
        added_terms=(added.both, added.person, added.form) if rewriter is not None else None,
        added_by_source=added.by_source if rewriter is not None else None,
        baseline_added_term_recall=base.recall if baseline is not None else None,
        baseline_added_term_precision=base.precision if baseline is not None else None,
        missed=missed,
        false_flags=false_flags,
        guard_false_alarms=alarms,
    )
