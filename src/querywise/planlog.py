"""The plan log: one JSON line per request, the raw message next to the plan.

The file is private (mode 0600) and rotated by size; session values never appear as they are
unless the deployment asks for it: session keys are logged, and the plan's access constraints
(which hold the session's values) are redacted or hashed. Each line is one `write` call on a
file opened in append mode, and rotation happens under an exclusive lock, so several processes
can share one log. (`logging.handlers.RotatingFileHandler` does neither across processes, nor
create the file private, so it is not used.)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

from querywise.conditions import AnyOf, Condition, Match, Scalar, Where
from querywise.conversation import Turn, as_turns
from querywise.plan import QueryPlan

__all__ = ["PlanLog", "read_conversations", "read_plans"]

SessionValues = Literal["redact", "hash", "keep"]
REDACTED = "[redacted]"


class PlanLog:
    """Appends plans to `path`.

    >>> log = PlanLog(Path("plans.jsonl"), session_values="hash")       # doctest: +SKIP
    >>> log.append(plan, history=["earlier turn"], session={"market": "eu"})  # doctest: +SKIP
    """

    def __init__(self, path: Path, *, session_values: SessionValues = "redact", max_bytes: int = 50_000_000, backups: int = 5) -> None:
        self.path, self.session_values, self.max_bytes, self.backups = Path(path), session_values, max_bytes, backups

    def append(self, plan: QueryPlan, *, history: Sequence[str | Turn] = (), session: Mapping[str, str] | None = None) -> None:
        """One line `{"ts", "message", "history", "session_keys", "plan"}`; `history` as
        `[{"role", "text"}]`, oldest first."""
        logged = plan.model_copy(update={"access": self._access(plan.access)})
        record = {
            "ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
            "message": plan.message,
            "history": [t.model_dump() for t in as_turns(history)],
            "session_keys": sorted(session or {}),
            "plan": json.loads(logged.to_json_line()),
        }
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", errors="backslashreplace")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            self._rotate_for(len(data))
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.fchmod(fd, 0o600)  # private even if an older version created it readable
                os.write(fd, data)
            finally:
                os.close(fd)

    def _access(self, access: Where) -> Where:
        if self.session_values == "keep":
            return access
        return Where(conditions=tuple(_masked(c, self._mask) for c in access.conditions))

    def _mask(self, value: Scalar) -> str:
        if self.session_values == "redact":
            return REDACTED
        return "sha256:" + hashlib.sha256(str(value).encode("utf-8", errors="backslashreplace")).hexdigest()[:16]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _rotate_for(self, incoming: int) -> None:
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0 or size + incoming <= self.max_bytes:
            return
        if self.backups == 0:
            self.path.unlink()
            return
        for i in range(self.backups - 1, 0, -1):  # plans.jsonl.4 -> .5, ..., .1 -> .2
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))


def _masked(condition: Condition, mask: Callable[[Scalar], str]) -> Condition:
    """The condition with its session value(s) masked; an access condition is an equality."""
    if isinstance(condition, Match):
        return condition.model_copy(update={"value": mask(condition.value)})
    if isinstance(condition, AnyOf):
        return condition.model_copy(update={"values": tuple(mask(v) for v in condition.values)})
    return condition


def read_plans(path: Path) -> Iterator[tuple[str, QueryPlan]]:
    """(raw message, plan) for every line of a plan log."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                yield rec["message"], QueryPlan.model_validate(rec["plan"])


def read_conversations(path: Path) -> Iterator[tuple[list[str], QueryPlan]]:
    """(the user turns before the message, oldest first; plan) for every line of a plan log."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                turns = [t.get("text", "") for t in rec.get("history", []) if isinstance(t, dict) and t.get("role", "user") == "user"]
                yield turns, QueryPlan.model_validate(rec["plan"])
