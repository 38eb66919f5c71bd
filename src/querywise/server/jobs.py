"""Background jobs of the service: a triage or an evaluation runs off the request path.

`POST /v1/triage` and `POST /v1/eval` answer 202 at once with a job; `GET /v1/jobs/{id}` gives its
status, progress (the phase and how many of its items are done) and, once done, its result (the
report JSON `triage --json` / `eval --json` print). Jobs run one at a time in one worker thread
per worker process (a job is CPU work that would otherwise slow every plan); at most
`max_queued` wait, counted over every worker, beyond that a new one is refused. A job is visible
only to the subject that started it (another subject gets 404, as for a job that does not exist).
Jobs are kept in a `JobStore` (`job_store.py`): a SQLite file every worker process shares
(`[server] jobs_file`), so a poll answered by any worker sees the job, or this process's memory
with one worker. The last `keep` finished jobs are kept.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from querywise.server.job_store import Job, JobStore, now

__all__ = ["Job", "JobQueueFull", "Jobs", "Progress"]

log = logging.getLogger("querywise.server")

#: What a job's function is given: `progress(phase, total)` returns `advance(n)`.
Progress = Callable[[str, int | None], Callable[[int], None]]


class JobQueueFull(RuntimeError):  # noqa: N818 (the service answers 429)
    """Too many jobs already wait."""


class Jobs:
    def __init__(self, *, max_queued: int = 4, keep: int = 100, path: Path | None = None) -> None:
        self.max_queued, self.keep = max_queued, keep
        self.store = JobStore(path)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="querywise-job")
        self._serial = itertools.count(1)
        # Whether a job's function runs in the pool's thread, and whether the service stopped: the
        # store closes once both say so, after the running job's last write.
        self._state = threading.Lock()
        self._running = self._closed = False

    def submit(self, kind: Literal["triage", "eval"], owner: str, fn: Callable[[Progress], dict[str, Any]]) -> Job:
        job = Job(id=self._new_id(kind), kind=kind, created_at=now())
        if (waiting := self.store.insert(owner, job, max_queued=self.max_queued)) is not None:
            raise JobQueueFull(f"{waiting} jobs already wait: try again when one has finished")
        self.store.forget_old(self.keep)
        self._pool.submit(self._run, job, fn)
        return job

    def add(self, kind: Literal["triage", "eval"], owner: str, result: dict[str, Any]) -> Job:
        """A finished job of a result made elsewhere (a report opened in the workbench)."""
        at = now()
        job = Job(id=self._new_id(kind), kind=kind, status="done", created_at=at, started_at=at, finished_at=at, result=result)
        self.store.insert(owner, job)
        self.store.forget_old(self.keep)
        return job

    def mine(self, owner: str) -> list[Job]:
        """The jobs `owner` started or opened, newest first."""
        return self.store.mine(owner)

    def _new_id(self, kind: str) -> str:
        return f"{kind}-{next(self._serial)}-{secrets.token_hex(6)}"  # unguessable: ids are links

    def get(self, job_id: str, owner: str) -> Job | None:
        return self.store.get(job_id, owner)

    def _run(self, job: Job, fn: Callable[[Progress], dict[str, Any]]) -> None:
        with self._state:
            if self._closed:  # taken by the thread as the service stopped: `close` reported it failed
                return
            self._running = True
        try:
            self._work(job, fn)
        finally:
            with self._state:
                self._running = False
                if self._closed:
                    self.store.close()

    def _work(self, job: Job, fn: Callable[[Progress], dict[str, Any]]) -> None:
        running = _Running(self.store, job.model_copy(update={"status": "running", "started_at": now()}))

        def progress(phase: str, total: int | None) -> Callable[[int], None]:
            running.change(phase=phase, total=total, done=0)
            return running.advance

        try:
            result = fn(progress)
        except Exception as exc:  # the job's own failure: reported on the job, never on another request
            log.warning("job %s failed", job.id, exc_info=True)
            running.change(status="failed", finished_at=now(), error=f"{type(exc).__name__}: {exc}"[:2000])
            return
        running.change(status="done", finished_at=now(), result=result)

    def close(self) -> None:
        """The service stops: waiting jobs are failed, a running one finishes (then the store closes)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._state:
            self._closed = True
            self.store.fail_queued("the service stopped before it ran the job")
            if not self._running:
                self.store.close()

    def open(self) -> None:
        """The service starts: its job store connects now (a jobs file SQLite cannot use stops the start)."""
        self.store.open()


class _Running:
    """A running job: each change written to its row at once, for whichever worker reads it."""

    def __init__(self, store: JobStore, job: Job) -> None:
        self.store, self.job = store, job
        self._lock = threading.Lock()
        store.update(job)

    def change(self, **changes: Any) -> None:
        with self._lock:
            self.job = self.job.model_copy(update=changes)
            self.store.update(self.job)

    def advance(self, n: int) -> None:
        with self._lock:
            self.job = self.job.model_copy(update={"done": self.job.done + n})
            self.store.update(self.job)
