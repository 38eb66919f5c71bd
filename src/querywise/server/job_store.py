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
        self._path = path
        self._lock = threading.Lock()  # one connection, shared by the request threads and the job thread
        if path is not None:
            _create_private(path)  # an unwritable place stops the start, before any connection
        # Opened on first use (or by `open`, at the service's start) and closed by `close`: an app
        # built and never served, as in tests, holds no connection for the garbage collector to close.
        self._db: sqlite3.Connection | None = None
        self._closed = False
        self._host, self._pid = socket.gethostname(), os.getpid()

    def open(self) -> None:
        """Connect now, so that a jobs file SQLite cannot use stops the service's start rather than its first job."""
        with self._lock:
            self._connection()

    def close(self) -> None:
        """Close the connection; the store is not used again (a file's jobs stay for the other workers)."""
        with self._lock:
            self._closed = True
            if self._db is not None:
                self._db.close()
                self._db = None

    def _connection(self) -> sqlite3.Connection:
        """The connection, opened if it is not yet; the caller holds `_lock`."""
        if self._closed:
            raise RuntimeError("the job store is closed")
        if self._db is None:
            self._db = _connect(self._path)
        return self._db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction that takes the write lock at once (a count and the insert it allows are atomic across workers)."""
        with self._lock:
            db = self._connection()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

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
            row = self._connection().execute("SELECT job, host, pid FROM jobs WHERE id = ? AND owner = ?", (job_id, owner)).fetchone()
        return None if row is None else self._read(*row)

    def mine(self, owner: str) -> list[Job]:
        """`owner`'s jobs, newest first."""
        with self._lock:
            rows = self._connection().execute("SELECT job, host, pid FROM jobs WHERE owner = ? ORDER BY seq DESC", (owner,)).fetchall()
        return [self._read(*row) for row in rows]

    def forget_old(self, keep: int) -> None:
        """Drop all but the newest `keep` finished jobs."""
        with self._write() as db:
            db.execute("DELETE FROM jobs WHERE status IN ('done', 'failed') AND seq NOT IN "
                       "(SELECT seq FROM jobs WHERE status IN ('done', 'failed') ORDER BY seq DESC LIMIT ?)", (keep,))

    def fail_queued(self, error: str) -> None:
        """This process stops: its jobs still waiting will never run (a running one finishes, or is
        read as failed once the process is gone)."""
        if self._db is None:  # never opened: this process stored no job
            return
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


def _connect(path: Path | None) -> sqlite3.Connection:
    """A connection to the jobs table at `path` (None: in this process's memory), the table created if missing."""
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(":memory:" if path is None else str(path), timeout=_BUSY_MS / 1000, check_same_thread=False,
                             isolation_level=None)
        if path is not None:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: a crash may lose the last progress update, never corrupt
        db.execute(_SCHEMA)
    except sqlite3.Error as exc:
        if db is not None:
            db.close()
        raise RuntimeError(f"[server] jobs_file {path}: {exc}") from None
    return db


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
