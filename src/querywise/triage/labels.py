"""What people say about triaged cases, kept safe, and the report they change.

A labels file is JSONL, one row per case id, the newest word on it:
`{"id", "label"?, "bucket"?, "note", "by", "at"}`. `label` is a query-defect kind (vocabulary,
compound, referent, filler: what `querywise triage --labels` reads and the detectors only
suggest); `bucket` overrides the bucket of any case a person disagrees with. A row needs one of
the two.

`LabelStore.save` reads the file, changes one row and writes it again under an exclusive lock
(`filelock`, a lock file beside it: every thread and worker process of a service serialises on
it, so two labellers saving at once both land); the file is replaced with `files.write_atomic`:
a process killed at any point leaves the old file or the new one, never a part of either.

`relabel` applies the labels to a report: the detectors' bucket of each case is kept beside the
person's, and `Agreement` counts how often they agree.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from querywise.files import read_jsonl, write_atomic
from querywise.triage.buckets import QUERY_BUCKETS, Bucket, TriageCase, classify
from querywise.triage.failures import QueryDefectKind, TriageInputError
from querywise.triage.report import SampleInfo, TriageReport, build_report

__all__ = ["Agreement", "Label", "LabelError", "LabelStore", "detectors_bucket", "load_labels", "read_labels", "relabel"]


class Label(BaseModel):
    """One person's word on one case."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    id: str = Field(min_length=1)
    label: QueryDefectKind | None = None  # which query move would have helped
    bucket: Bucket | None = None  # the bucket the person puts the case in, whatever the detectors said
    note: str = Field("", max_length=2000)
    by: str = ""
    at: dt.datetime = Field(default_factory=lambda: dt.datetime.now(dt.UTC))

    @model_validator(mode="after")
    def _says_something(self) -> Label:
        if self.label is None and self.bucket is None:
            raise ValueError("a label needs 'label' (a query-defect kind) or 'bucket' (an override)")
        return self


def read_labels(path: Path | str, *, problems: list[str] | None = None) -> dict[str, Label]:
    """The labels of a file by case id (a later row of an id wins); a bad row names its line
    (`TriageInputError`; given `problems`, the row is skipped and its error appended there)."""
    out: dict[str, Label] = {}
    rows = read_jsonl(path, error=TriageInputError) if problems is None else _rows_or_problems(Path(path), problems)
    for line, rec in rows:
        try:
            label = Label.model_validate(rec)
        except ValidationError as exc:
            first = exc.errors()[0]
            given = f", got {first['input']!r}" if first["loc"] else ""
            error = TriageInputError(path, line, f"{'.'.join(str(p) for p in first['loc']) or 'row'}: {first['msg']}{given}")
            if problems is None:
                raise error from None
            problems.append(str(error))
            continue
        out[label.id] = label
    return out


def _rows_or_problems(path: Path, problems: list[str]) -> Iterator[tuple[int, Any]]:
    """The JSON rows of `path` by line; a line that is not JSON goes to `problems`, not up."""
    with path.open("rb") as fh:
        for line, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield line, json.loads(raw)
            except ValueError as exc:  # not JSON, not UTF-8
                problems.append(str(TriageInputError(path, line, f"not JSON: {exc}")))


def load_labels(path: Path | str) -> dict[str, QueryDefectKind]:
    """The query-defect labels of a labels file (`querywise triage --labels`): id -> kind. Rows
    that only override a bucket are the workbench's, and read by `relabel`."""
    return {i: lab.label for i, lab in read_labels(path).items() if lab.label is not None}


class LabelError(Exception):
    """A change to the labels file that cannot be made: another's label (`why` "owner"), rows to
    mend first ("bad_rows"), a file that cannot be written ("unwritable"); the message says which."""

    def __init__(self, why: Literal["owner", "bad_rows", "unwritable"], detail: str) -> None:
        super().__init__(detail)
        self.why = why


class LabelStore:
    """The labels file of a workbench: read at any time, saved one change at a time.

    A label belongs to whoever said it (`Label.by`): another labeller can neither replace nor
    remove it. A bad row does not stop the pages (`problems` names it); a change is refused
    until it is mended, since writing the file would drop it. A symlinked file is written
    through its link (the link stays)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = FileLock(str(self.path) + ".lock")
        self.problems: list[str] = []  # the bad rows of the last read

    def all(self) -> dict[str, Label]:
        if not self.path.exists():
            self.problems = []
            return {}
        problems: list[str] = []
        labels = read_labels(self.path, problems=problems)
        self.problems = problems
        return labels

    def save(self, label: Label) -> dict[str, Label]:
        """Add or replace the label of `label.id` (`LabelError` if another labeller's); every label after the save."""
        return self._change(label.id, label, label.by)

    def remove(self, case_id: str, by: str) -> dict[str, Label]:
        """Forget what `by` said about `case_id` (`LabelError` if another labeller said it); every label after."""
        return self._change(case_id, None, by)

    def _change(self, case_id: str, label: Label | None, by: str) -> dict[str, Label]:
        try:
            with self._lock:  # read, change, write as one step for every thread and process
                labels = self.all()
                if self.problems:
                    raise LabelError("bad_rows", f"the labels file has rows to mend first (saving would drop them): {self.problems[0]}")
                said = labels.get(case_id)
                if said is not None and said.by != by:
                    raise LabelError("owner", f"the label of {case_id!r} is {said.by or 'someone else'}'s: only they can change it")
                labels.pop(case_id, None)
                if label is not None:
                    labels[case_id] = label
                target = self.path.resolve()  # through a symlink: replacing the link would cut it from its file
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(target, [json.dumps(v.model_dump(mode="json", exclude_none=True)) + "\n" for v in labels.values()])
                return labels
        except OSError as exc:  # the file, its folder or its lock
            raise LabelError("unwritable", f"the labels file {self.path} cannot be written: {exc.strerror or exc}") from None


def detectors_bucket(case: TriageCase, *, k: int, context_k: int) -> tuple[Bucket, str]:
    """The bucket the detectors alone give the case (no human label), and why."""
    bucket, reason, _ = classify(case.evidence.model_copy(update={"label": None}), k=k, context_k=context_k)
    return bucket, reason


class Agreement(BaseModel):
    """Detectors against people, over the cases a person labelled."""

    labelled: int  # cases with a person's word
    agreed: int  # ... whose bucket the detectors had given too
    rate: float | None  # agreed / labelled (None with no labels)
    detectors: dict[str, str]  # case id -> the detectors' bucket, for every case


def relabel(report: Mapping[str, object], labels: Mapping[str, Label]) -> tuple[TriageReport, Agreement]:
    """The report (a `triage --json` object) with the labels applied and recounted: a bucket
    override puts the case in that bucket; a query-defect label names the kind of a case the
    detectors sent to the query layer (on any other case it is kept in the evidence only)."""
    sample = SampleInfo.model_validate(report["sample"])
    options = sample.options
    k, context_k = options.depths
    cases = [TriageCase.model_validate(c) for c in report["cases"]]  # type: ignore[attr-defined]
    out: list[TriageCase] = []
    detectors: dict[str, str] = {}
    agreed = labelled = 0
    for case in cases:
        first, why = detectors_bucket(case, k=k, context_k=context_k)
        detectors[case.id] = first
        said = labels.get(case.id)
        ev = case.evidence.model_copy(update={"label": said.label if said else None})
        if said is None:
            bucket, reason, source = classify(ev, k=k, context_k=context_k)
        elif said.bucket is not None:
            bucket, source = said.bucket, "human"
            reason = f"set by {said.by or 'a person'}" + (f": {said.note}" if said.note else "") + f" (the detectors said {first}: {why})"
        else:
            bucket, reason, source = classify(ev, k=k, context_k=context_k)
            if first in QUERY_BUCKETS and said.note:
                reason = f"{reason} by {said.by or 'a person'}: {said.note}"
        if said is not None:
            labelled += 1
            agreed += bucket == first
        out.append(case.model_copy(update={"bucket": bucket, "evidence": ev.model_copy(update={"reason": reason, "label_source": source})}))
    rebuilt = build_report(out, sample.population, options)
    rate = round(agreed / labelled, 4) if labelled else None
    return rebuilt, Agreement(labelled=labelled, agreed=agreed, rate=rate, detectors=detectors)
