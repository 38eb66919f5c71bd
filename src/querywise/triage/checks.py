"""Were the failures made against this index? The ids and texts of the rows against its chunks,
as `eval` checks its judged ids (`deployment_check.judged_id_problems`), and the rule the file
records against the one the triage runs with.

None of the rows' ids in the index is an error (the wrong index, or ids that changed); some
unknown ids, a gold text that no longer matches its chunk, or a context that differs from the
file's rule are warnings, stated in the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from querywise.deployment_check import judged_id_problems
from querywise.failures import FailureRow
from querywise.triage.locate import ChunkTable, compact

__all__ = ["file_context_k", "index_problems", "rule_problems"]

_EXAMPLES = 3


def index_problems(failures: Sequence[FailureRow], table: ChunkTable, *, index: str = "being triaged") -> list[str]:
    """Warnings about rows made against another index; a `ValueError` when the index holds none of
    their ids. Ids: the golds (`gold_chunk`, `gold_doc`, `gold_ids`) and the `retrieved` lists;
    texts: a `gold_text` whose `gold_chunk` is in the index but no longer holds it (whitespace
    ignored, so mis-extracted spacing is not a mismatch)."""
    known = set(table.chunks) | set(table.by_doc)
    golds = [g for f in failures for g in dict.fromkeys([*(x for x in (f.gold_chunk, f.gold_doc) if x), *f.gold_ids])]
    retrieved = [r for f in failures for r in (f.retrieved or [])]
    problems = judged_id_problems(golds + retrieved, known, index=index) if golds or retrieved else []
    errors = [p.message for p in problems if p.severity == "error"]
    if errors:
        raise ValueError(f"the failures were not made against this index: {errors[0]}")
    out = [p.message.replace("judged ids", "ids of the failures file (golds and retrieved)") for p in problems]
    changed = [
        f.id for f in failures if f.gold_chunk and f.gold_text and f.gold_chunk in table.chunks and compact(f.gold_text) not in table.compact(f.gold_chunk)
    ]
    if changed:
        shown = ", ".join(repr(i) for i in changed[:_EXAMPLES]) + (", ..." if len(changed) > _EXAMPLES else "")
        out.append(
            f"{len(changed)} of {len(failures)} rows give a gold text their gold chunk no longer holds (e.g. cases {shown}): "
            "the index changed since the failures were made; their gold is located by its text"
        )
    return out


def file_context_k(failures: Sequence[FailureRow]) -> tuple[int | None, list[str]]:
    """The generator's context the failures file records (`made_by.context_k`), and a warning when
    its rows disagree (then none is used)."""
    seen = {f.made_by.context_k for f in failures if f.made_by is not None and f.made_by.context_k is not None}
    if len(seen) > 1:
        return None, [f"the failures file's rows record different contexts ({', '.join(map(str, sorted(seen)))}): none is used"]
    return (next(iter(seen)) if seen else None), []


def rule_problems(failures: Sequence[FailureRow], context_k: int) -> list[str]:
    """A warning when the triage's context differs from the one the file's rule states."""
    rules = {f.made_by.acceptable_if for f in failures if f.made_by is not None}
    stated, _ = file_context_k(failures)
    if stated is not None and stated != context_k:
        return [
            f"the failures were made with `{' / '.join(sorted(rules))}` (the generator sees {stated}); this triage "
            f"uses context_k = {context_k}: generation and ranking are cut at a different rank than the failures were"
        ]
    return []
