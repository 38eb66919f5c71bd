"""The jobs table every worker process shares: a job taken by one worker is seen, with its progress
and result, by another; the owner check and the queue bound hold across them; a job whose
process died reads as failed."""

from __future__ import annotations

import stat
import subprocess
import sys
import threading
import time
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
    job = JobStore(path).get("triage-1-dead", "ops")
    assert job is not None and job.status == "failed" and "stopped before it finished" in (job.error or "")
    mine = JobStore(path)
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
