"""The rows `querywise eval --failures` writes: every case of the run with a relevant id, as
`querywise triage` reads them (the row model and its file: `querywise.failures`).

A case without a relevant id has no score to judge it by; it is counted in `FailureRows.skipped`,
not written.

- `acceptable` is the `--acceptable-if` rule (`evaluation.acceptable`) applied to the case's scores.
- `retrieved` is the ranking that was scored, as deep as the search went, at the case's judged
  granularity (document ids when the case judges documents, see `evaluation.harness`).
- `gold_ids` are the relevant ids, best grade first. The primary gold is the first of them (ties:
  the case's own order): `gold_chunk` + `gold_text` (the chunk's text) when it is a chunk id of the
  index; `gold_doc` when it is the document id of chunks cut from one record ("any of its chunks
  answers"); `gold_chunk` alone when the index holds neither, which triage reports as absent.
  Triage reads the whole of `gold_ids` as the gold set; the primary gold is the one whose text
  the row carries.
- `route`, `searched`, `expected_route`: the plan's route and searched texts, the case's expected
  route (triage's *routing* bucket reads them).
- `made_by`: the rule (`--acceptable-if`) and, for a `hit@K` rule, K as the generator's context;
  the search mode and the index when the caller gives them (`made_by`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel

from querywise.corpus import Chunk
from querywise.evaluation.acceptable import AcceptableRule
from querywise.evaluation.cases import Case
from querywise.evaluation.harness import CaseRun
from querywise.failures import FailureRow, MadeBy

__all__ = ["FailureRows", "failure_rows", "made_by"]


class FailureRows(BaseModel):
    """The rows of one run and what was left out."""

    rule: AcceptableRule
    rows: list[FailureRow]
    skipped: list[str]  # ids of cases with no relevant id

    @property
    def n_acceptable(self) -> int:
        return sum(r.acceptable for r in self.rows)

    @property
    def n_failing(self) -> int:
        return len(self.rows) - self.n_acceptable


def _ranked_gold(relevant: Mapping[str, int]) -> list[str]:
    """Relevant ids (grade > 0), best grade first; `sorted` is stable, so ties keep the case's order."""
    return sorted((d for d, g in relevant.items() if g > 0), key=lambda d: -relevant[d])


def made_by(rule: AcceptableRule, *, mode: str | None = None, index: str | None = None, n_chunks: int | None = None) -> MadeBy:
    """What a failures file records of the rule that made it (every row carries it)."""
    return MadeBy(acceptable_if=rule.label, context_k=rule.shown, mode=mode, index=index, n_chunks=n_chunks)


def failure_rows(cases: Sequence[Case], runs: Sequence[CaseRun], chunks: Iterable[Chunk], rule: AcceptableRule, *, made: MadeBy | None = None) -> FailureRows:
    """Every case with a relevant id as a row, `acceptable` by `rule`.

    `runs` are the run's case records in the order of `cases` (`evaluate(..., keep_ids=None)`
    keeps their whole ranking); `chunks` are the index's chunks, read once for the gold texts
    and document ids. Every metric the rule reads must have been scored.
    """
    if len(cases) != len(runs) or any(c.id != r.id for c, r in zip(cases, runs, strict=False)):
        raise ValueError("the run's case records do not match the cases, in number or order")
    missing = [m.label for m in rule.metrics if runs and m.label not in runs[0].scores]
    if missing:
        raise ValueError(f"the run did not score {', '.join(missing)}, which the acceptable rule reads")
    golds = {c.id: _ranked_gold(c.relevant) for c in cases}
    wanted = {g[0] for g in golds.values() if g}
    texts: dict[str, str] = {}
    docs: set[str] = set()
    for chunk in chunks:  # one pass over the index: the primary golds' texts and which are documents
        if chunk.id in wanted:
            texts[chunk.id] = chunk.text
        if chunk.doc_id in wanted:
            docs.add(chunk.doc_id)
    rows: list[FailureRow] = []
    skipped: list[str] = []
    for case, run in zip(cases, runs, strict=True):
        gold = golds[case.id]
        if not gold:
            skipped.append(case.id)
            continue
        primary = gold[0]
        if primary in texts:
            where: dict[str, str] = {"gold_chunk": primary, "gold_text": texts[primary]}
        elif primary in docs:
            where = {"gold_doc": primary}
        else:
            where = {"gold_chunk": primary}
        rows.append(FailureRow(
            id=case.id, question=case.message, history=case.history, acceptable=rule.acceptable(run.scores),
            gold_ids=gold, scores=dict(run.scores), retrieved=list(run.top), route=run.route or None,
            searched=list(run.searched), expected_route=case.route, made_by=made or made_by(rule), **where,
        ))
    return FailureRows(rule=rule, rows=rows, skipped=skipped)
