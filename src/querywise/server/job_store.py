"""Where the service's jobs live: one SQLite table, so that every worker process sees every job.

With `--workers N` a poll of `GET /v1/jobs/{id}` lands on any worker, not only on the one that
took the job; the job's state (status, phase, progress, error, and its result once done) is a row
of a SQLite database that all of them open (`[server] jobs_file`; WAL, so a poll never waits for
the job's writes). Without a file (one worker) the same table lives in the process's memory.

A row is the `Job` model as JSON beside the columns the store queries (owner, status, the process
running it). A job left `queued` or `running` by a process that is gone (killed, restarted) is
reported failed when read, rather than running for ever.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

__all__ = ["Job", "JobStore", "now"]


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


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    status TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    job TEXT NOT NULL
)
"""
_BUSY_MS = 10_000  # how long a write waits for another worker's: SQLite serialises writers


class JobStore:
    """The jobs table: `path` a file shared by the worker processes, or None for this process only."""

    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()  # one connection, shared by the request threads and the job thread
        if path is not None:
            _create_private(path)
        try:
            self._db = sqlite3.connect(":memory:" if path is None else str(path), timeout=_BUSY_MS / 1000, check_same_thread=False,
                                       isolation_level=None)
            if path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash may lose the last progress update, never corrupt
            self._db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            raise RuntimeError(f"[server] jobs_file {path}: {exc}") from None
        self._host, self._pid = socket.gethostname(), os.getpid()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction that takes the write lock at once (a count and the insert it allows are atomic across workers)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def insert(self, owner: str, job: Job, *, max_queued: int | None = None) -> int | None:
        """Store a new job; with `max_queued`, only if fewer jobs than that wait (else the number waiting, nothing stored)."""
        with self._write() as db:
            if max_queued is not None:
                waiting = int(db.execute("SELECT count(*) FROM jobs WHERE status = 'queued'").fetchone()[0])
                if waiting >= max_queued:
                    return waiting
            db.execute("INSERT INTO jobs (id, owner, status, host, pid, job) VALUES (?, ?, ?, ?, ?, ?)",
                       (job.id, owner, job.status, self._host, self._pid, job.model_dump_json()))
        return None

    def update(self, job: Job) -> None:
        with self._write() as db:
            db.execute("UPDATE jobs SET status = ?, job = ? WHERE id = ?", (job.status, job.model_dump_json(), job.id))

    def get(self, job_id: str, owner: str) -> Job | None:
        with self._lock:
            row = self._db.execute("SELECT job, host, pid FROM jobs WHERE id = ? AND owner = ?", (job_id, owner)).fetchone()
        return None if row is None else self._read(*row)

    def mine(self, owner: str) -> list[Job]:
        """`owner`'s jobs, newest first."""
        with self._lock:
            rows = self._db.execute("SELECT job, host, pid FROM jobs WHERE owner = ? ORDER BY seq DESC", (owner,)).fetchall()
        return [self._read(*row) for row in rows]

    def forget_old(self, keep: int) -> None:
        """Drop all but the newest `keep` finished jobs."""
        with self._write() as db:
            db.execute("DELETE FROM jobs WHERE status IN ('done', 'failed') AND seq NOT IN "
                       "(SELECT seq FROM jobs WHERE status IN ('done', 'failed') ORDER BY seq DESC LIMIT ?)", (keep,))

    def fail_queued(self, error: str) -> None:
        """This process stops: its jobs still waiting will never run (a running one finishes, or is
        read as failed once the process is gone)."""
        with self._write() as db:
            rows = db.execute("SELECT job FROM jobs WHERE host = ? AND pid = ? AND status = 'queued'", (self._host, self._pid)).fetchall()
            for (text,) in rows:
                job = _failed(Job.model_validate_json(text), error)
                db.execute("UPDATE jobs SET status = ?, job = ? WHERE id = ?", (job.status, job.model_dump_json(), job.id))

    def _read(self, text: str, host: str, pid: int) -> Job:
        job = Job.model_validate_json(text)
        if job.status in ("queued", "running") and host == self._host and pid != self._pid and not _alive(pid):
            return _failed(job, f"the worker process running it (pid {pid}) stopped before it finished")
        return job


def _failed(job: Job, error: str) -> Job:
    return job.model_copy(update={"status": "failed", "finished_at": now(), "error": error})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def _create_private(path: Path) -> None:
    """The database file, readable by its owner only (it holds reports, and reports quote passages);
    SQLite gives its -wal and -shm files the same mode."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    except OSError as exc:
        raise RuntimeError(f"[server] jobs_file {path}: {exc.strerror}") from None
