"""The jobs table every worker process shares: a job taken by one worker is seen, with its progress
and result, by another; the owner check and the queue bound hold across them; a job whose
process died reads as failed."""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from querywise.server.job_store import Job, JobStore, now
from querywise.server.jobs import JobQueueFull, Jobs


def _wait_for(jobs: Jobs, job_id: str, owner: str, status: str) -> Job:
    deadline = time.monotonic() + 10
    while (job := jobs.get(job_id, owner)) is None or job.status != status:
        assert time.monotonic() < deadline, f"{job_id} never {status}: {job}"
        time.sleep(0.01)
    return job


def test_a_job_taken_by_one_worker_is_seen_by_another_with_its_progress_and_result(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    one, two = Jobs(path=path), Jobs(path=path)  # as two worker processes open the same [server] jobs_file
    release = threading.Event()

    def work(progress: Any) -> dict[str, Any]:
        advance = progress("probing", 3)
        advance(2)
        release.wait(10)
        return {"cases": ["f1", "f2"]}

    try:
        job = one.submit("triage", "ops", work)
        seen = _wait_for(two, job.id, "ops", "running")
        deadline = time.monotonic() + 10
        while (seen := two.get(job.id, "ops")) is not None and seen.done < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen is not None and (seen.phase, seen.done, seen.total) == ("probing", 2, 3)
        assert two.get(job.id, "mallory") is None  # another subject: as if it did not exist
        release.set()
        assert _wait_for(two, job.id, "ops", "done").result == {"cases": ["f1", "f2"]}
        opened = two.add("eval", "ops", {"n": 3})  # a report opened in the workbench of the other worker
        assert [j.id for j in one.mine("ops")] == [opened.id, job.id] and one.mine("mallory") == []
    finally:
        release.set()
        one.close()
        two.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # reports quote passages


def test_the_queue_bound_counts_the_jobs_waiting_in_every_worker(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    one, two = Jobs(path=path, max_queued=2), Jobs(path=path, max_queued=2)
    release = threading.Event()
    try:
        for jobs in (one, two):
            running = jobs.submit("eval", "ops", lambda progress: {"ok": release.wait(10)})
            _wait_for(jobs, running.id, "ops", "running")
        one.submit("eval", "ops", lambda progress: {})
        two.submit("eval", "ops", lambda progress: {})  # two wait now, one in each worker
        with pytest.raises(JobQueueFull, match="2 jobs already wait"):
            one.submit("eval", "ops", lambda progress: {})
    finally:
        release.set()
        one.close()
        two.close()


def test_a_job_whose_worker_process_died_reads_as_failed(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    script = ("import sys; from querywise.server.job_store import Job, JobStore, now\n"
              "job = Job(id=sys.argv[2], kind='triage', status='running', created_at=now())\n"
              "JobStore(__import__('pathlib').Path(sys.argv[1])).insert('ops', job)\n")
    subprocess.run([sys.executable, "-c", script, str(path), "triage-1-dead"], check=True, timeout=60)  # a worker that took a job, then died
    with closing(JobStore(path)) as store:
        job = store.get("triage-1-dead", "ops")
    assert job is not None and job.status == "failed" and "stopped before it finished" in (job.error or "")
    with closing(JobStore(path)) as mine:
        mine.insert("ops", Job(id="triage-2-live", kind="triage", status="running", created_at=now()))
        assert (live := mine.get("triage-2-live", "ops")) is not None and live.status == "running"  # this process's own: still running


def test_without_a_file_the_jobs_live_in_this_process_and_an_unwritable_file_stops_the_start(tmp_path: Path) -> None:
    jobs = Jobs()
    try:
        job = jobs.add("eval", "ops", {"n": 1})
        assert jobs.get(job.id, "ops") == job and not list(tmp_path.iterdir())
    finally:
        jobs.close()
    (tmp_path / "blocker").write_text("a file where the folder should be")
    with pytest.raises(RuntimeError, match="jobs_file"):
        JobStore(tmp_path / "blocker" / "jobs.sqlite")
    (tmp_path / "notes.sqlite").write_text("not a database, but a file SQLite cannot use\n" * 100)
    with pytest.raises(RuntimeError, match="jobs_file"):
        JobStore(tmp_path / "notes.sqlite").open()  # what the service's start does


def _wal(path: Path) -> Path:
    """SQLite's write-ahead log of `path`: present while a connection to it is open, removed when the last one closes."""
    return path.with_name(path.name + "-wal")


def test_a_stopping_service_writes_its_running_job_s_result_then_closes_the_jobs_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    idle = Jobs(path=path)  # a worker that never took a job holds no connection
    jobs = Jobs(path=path)
    release = threading.Event()
    try:
        job = jobs.submit("triage", "ops", lambda progress: {"ok": release.wait(10)})
        _wait_for(jobs, job.id, "ops", "running")
        waiting = jobs.submit("eval", "ops", lambda progress: {})
        jobs.close()  # SIGTERM: the waiting job is failed, the running one finishes
        assert _wal(path).exists()  # the running job still writes
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while _wal(path).exists():  # the job's last write, then the store's close: no connection is left
        assert time.monotonic() < deadline, "the jobs file is still open after the running job finished"
        time.sleep(0.01)
    idle.close()
    with closing(JobStore(path)) as store:
        done, failed = store.get(job.id, "ops"), store.get(waiting.id, "ops")
    assert done is not None and (done.status, done.result) == ("done", {"ok": True})
    assert failed is not None and failed.status == "failed" and "stopped before it ran" in (failed.error or "")
