"""Background jobs of the service: a triage or an evaluation runs off the request path.

`POST /v1/triage` and `POST /v1/eval` answer 202 at once with a job; `GET /v1/jobs/{id}` gives its
status, progress (the phase and how many of its items are done) and, once done, its result (the
report JSON `triage --json` / `eval --json` print). Jobs run one at a time in one worker thread
per worker process (a job is CPU work that would otherwise slow every plan); at most
`max_queued` wait, beyond that a new one is refused. A job is visible only to the subject that
started it (another subject gets 404, as for a job that does not exist). The last `keep`
finished jobs are kept in memory: a restart forgets them (per worker, like every cache here).
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["Job", "JobQueueFull", "Jobs", "Progress"]

log = logging.getLogger("querywise.server")

#: What a job's function is given: `progress(phase, total)` returns `advance(n)`.
Progress = Callable[[str, int | None], Callable[[int], None]]


class Job(BaseModel):
    id: str
    kind: Literal["triage", "eval"]
    status: Literal["queued", "running", "done", "failed"] = "queued"
    phase: str | None = None
    done: int = 0  # items of the current phase
    total: int | None = None
    created_at: dt.datetime
    started_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    error: str | None = None
    result: dict[str, Any] | None = None


class JobQueueFull(RuntimeError):  # noqa: N818 (the service answers 429)
    """Too many jobs already wait."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Jobs:
    def __init__(self, *, max_queued: int = 4, keep: int = 100) -> None:
        self.max_queued, self.keep = max_queued, keep
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="querywise-job")
        self._jobs: OrderedDict[str, tuple[str, Job]] = OrderedDict()  # id -> (owner, job)
        self._lock = threading.Lock()
        self._serial = itertools.count(1)

    def submit(self, kind: Literal["triage", "eval"], owner: str, fn: Callable[[Progress], dict[str, Any]]) -> Job:
        with self._lock:
            waiting = sum(1 for _, j in self._jobs.values() if j.status == "queued")
            if waiting >= self.max_queued:
                raise JobQueueFull(f"{waiting} jobs already wait: try again when one has finished")
            job = Job(id=self._new_id(kind), kind=kind, created_at=_now())
            self._jobs[job.id] = (owner, job)
            self._forget_old()
        self._pool.submit(self._run, job.id, fn)
        return job

    def add(self, kind: Literal["triage", "eval"], owner: str, result: dict[str, Any]) -> Job:
        """A finished job of a result made elsewhere (a report opened in the workbench)."""
        now = _now()
        job = Job(id=self._new_id(kind), kind=kind, status="done", created_at=now, started_at=now, finished_at=now, result=result)
        with self._lock:
            self._jobs[job.id] = (owner, job)
            self._forget_old()
        return job

    def mine(self, owner: str) -> list[Job]:
        """The jobs `owner` started or opened, newest first."""
        with self._lock:
            return [j for o, j in reversed(self._jobs.values()) if o == owner]

    def _new_id(self, kind: str) -> str:
        return f"{kind}-{next(self._serial)}-{secrets.token_hex(6)}"  # unguessable: ids are links

    def get(self, job_id: str, owner: str) -> Job | None:
        with self._lock:
            found = self._jobs.get(job_id)
        return found[1] if found is not None and found[0] == owner else None

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            owner, job = self._jobs[job_id]
            self._jobs[job_id] = (owner, job.model_copy(update=changes))

    def _run(self, job_id: str, fn: Callable[[Progress], dict[str, Any]]) -> None:
        self._update(job_id, status="running", started_at=_now())

        def progress(phase: str, total: int | None) -> Callable[[int], None]:
            self._update(job_id, phase=phase, total=total, done=0)

            def advance(n: int) -> None:
                with self._lock:
                    owner, job = self._jobs[job_id]
                    self._jobs[job_id] = (owner, job.model_copy(update={"done": job.done + n}))

            return advance

        try:
            result = fn(progress)
        except Exception as exc:  # the job's own failure: reported on the job, never on another request
            log.warning("job %s failed", job_id, exc_info=True)
            self._update(job_id, status="failed", finished_at=_now(), error=f"{type(exc).__name__}: {exc}"[:2000])
            return
        self._update(job_id, status="done", finished_at=_now(), result=result)

    def _forget_old(self) -> None:
        finished = [i for i, (_, j) in self._jobs.items() if j.status in ("done", "failed")]
        for job_id in finished[: max(0, len(finished) - self.keep)]:
            del self._jobs[job_id]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
