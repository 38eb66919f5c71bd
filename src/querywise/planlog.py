"""The plan log: one JSON line per request, the raw message next to the plan."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from querywise.plan import QueryPlan

__all__ = ["append_plan", "read_plans"]


def append_plan(
    path: Path,
    plan: QueryPlan,
    *,
    history: Sequence[str] = (),
    session: Mapping[str, str] | None = None,
) -> None:
    """Append one line `{"ts", "message", "history", "session_keys", "plan"}` to `path`.

    Session values are not logged (they may identify a user); their keys are.
    """
    record = {
        "ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "message": plan.message,
        "history": list(history),
        "session_keys": sorted(session or {}),
        "plan": json.loads(plan.to_json_line()),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False) + "\n"
    # One write call in append mode, so concurrent writers never interleave within a line.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def read_plans(path: Path) -> Iterator[tuple[str, QueryPlan]]:
    """(raw message, plan) for every line of a plan log."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield rec["message"], QueryPlan.model_validate(rec["plan"])
