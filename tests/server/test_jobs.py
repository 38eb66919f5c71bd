"""Triage and eval as background jobs of the service: 202 at once, progress, the report, and
who may start and see them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from shop_deployment import shop_settings

from querywise.config import ServerSettings
from querywise.corpus import Chunk
from querywise.index import build_index
from querywise.server import Authenticator, create_app, running
from querywise.service import QueryWise

FAILURES = [
    {"id": "f1", "question": "how long is the warranty on the Vela X3?", "retrieved": ["shipping", "returns"], "gold_chunk": "x3-warranty"},
    {"id": "f2", "question": "replacement ear pads", "retrieved": ["shipping"], "gold_text": "Replacement cushions for the Vela X3"},
    {"id": "ok", "question": "shipping time", "acceptable": True},
]
CASES = [
    {"id": "c1", "message": "how long is the warranty on the Vela X3?", "relevant": ["x3-warranty"], "session": {"market": "eu"}},
    {"id": "c2", "message": "Pico Buds battery", "relevant": ["buds-battery"], "session": {"market": "eu"}},
    {"id": "c3", "message": "and the Pro?", "history": ["how long is the warranty on the Vela X3?"], "relevant": ["x3pro-warranty"],
     "session": {"market": "eu"}},
]


@pytest.fixture
def url(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, jwt_secret: str) -> Iterator[str]:
    settings = shop_settings(tmp_path).model_copy(update={"server": ServerSettings(rate_limit=None, max_queued_jobs=2)})
    with (build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as qw,
          running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as base):
        yield base


def _wait(url: str, location: str, headers: dict[str, str]) -> dict[str, Any]:
    seen = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job: dict[str, Any] = httpx.get(f"{url}{location}", headers=headers).json()
        seen.append(job["status"])
        if job["status"] in ("done", "failed"):
            job["seen"] = seen
            return job
        time.sleep(0.05)
    raise AssertionError(f"job did not finish: {seen[-5:]}")


def test_a_triage_job_answers_at_once_and_reports_when_done(url: str, token: Callable[..., str]) -> None:
    ops = {"Authorization": f"Bearer {token(market='eu', sub='ops', scope='querywise:jobs')}"}
    started = httpx.post(f"{url}/v1/triage", json={"failures": FAILURES, "k": 5, "context_k": 2}, headers=ops)
    assert started.status_code == 202 and started.json()["status"] in ("queued", "running", "done")
    job = _wait(url, started.headers["location"], ops)
    assert job["status"] == "done", job["error"]
    report = job["result"]
    assert len(report["cases"]) == 2 and sum(report["buckets"].values()) == 2  # the acceptable row is counted, not triaged
    assert {c["id"] for c in report["cases"]} == {"f1", "f2"}
    assert job["phase"] and job["done"] >= 1 and job["started_at"] and job["finished_at"]


def test_an_eval_job_reports_the_components(url: str, token: Callable[..., str]) -> None:
    ops = {"Authorization": f"Bearer {token(market='eu', sub='ops', scope='querywise:jobs other')}"}
    started = httpx.post(f"{url}/v1/eval", json={"cases": CASES, "metrics": ["ndcg@10", "recall@5"]}, headers=ops)
    assert started.status_code == 202
    job = _wait(url, started.headers["location"], ops)
    assert job["status"] == "done", job["error"]
    result = job["result"]
    assert result["n"] == 3 and set(result["overall"]) >= {"ndcg@10", "recall@5"} and len(result["cases"]) == 3


def test_jobs_need_the_scope_and_are_seen_only_by_their_starter(url: str, token: Callable[..., str]) -> None:
    user = {"Authorization": f"Bearer {token(market='eu', sub='alice')}"}
    refused = httpx.post(f"{url}/v1/triage", json={"failures": FAILURES}, headers=user)
    assert refused.status_code == 403 and "querywise:jobs" in refused.json()["detail"]
    ops = {"Authorization": f"Bearer {token(market='eu', sub='ops', scope='querywise:jobs')}"}
    location = httpx.post(f"{url}/v1/triage", json={"failures": FAILURES, "k": 5, "context_k": 2}, headers=ops).headers["location"]
    other = {"Authorization": f"Bearer {token(market='eu', sub='mallory', scope='querywise:jobs')}"}
    assert httpx.get(f"{url}{location}", headers=other).status_code == 404  # as if it did not exist
    assert httpx.get(f"{url}{location}").status_code == 401
    _wait(url, location, ops)


def test_a_bad_row_fails_the_job_naming_the_row_and_a_bad_request_is_422(url: str, token: Callable[..., str]) -> None:
    ops = {"Authorization": f"Bearer {token(market='eu', sub='ops', scope='querywise:jobs')}"}
    bad = [FAILURES[0], {"id": "f9", "question": "no gold"}]
    job = _wait(url, httpx.post(f"{url}/v1/triage", json={"failures": bad}, headers=ops).headers["location"], ops)
    assert job["status"] == "failed" and "row 2" in job["error"]
    assert httpx.post(f"{url}/v1/triage", json={"failures": FAILURES, "k": 5, "context_k": 9}, headers=ops).status_code == 422
    assert httpx.post(f"{url}/v1/eval", json={"cases": [], "session": {"market": "us"}}, headers=ops).status_code == 422


def test_the_queue_is_bounded_and_a_job_reports_its_progress() -> None:
    import threading

    from querywise.server.jobs import JobQueueFull, Jobs

    release = threading.Event()

    def slow(progress: Any) -> dict[str, Any]:
        advance = progress("probing", 3)
        advance(2)
        release.wait(10)
        return {"ok": True}

    jobs = Jobs(max_queued=1)
    try:
        first = jobs.submit("triage", "ops", slow)
        deadline = time.monotonic() + 5
        while (j := jobs.get(first.id, "ops")) is not None and j.done < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert j is not None and (j.status, j.phase, j.done, j.total) == ("running", "probing", 2, 3)
        jobs.submit("triage", "ops", slow)  # waits
        with pytest.raises(JobQueueFull):
            jobs.submit("eval", "ops", slow)
        assert jobs.get(first.id, "someone-else") is None
    finally:
        release.set()
        jobs.close()


def test_the_client_starts_and_waits_for_a_job(url: str, token: Callable[..., str]) -> None:
    from querywise import Client

    with Client(url, token=token(market="eu", sub="ops", scope="querywise:jobs")) as client:
        job = client.wait(client.start_triage(FAILURES, k=5, context_k=2)["id"], poll_s=0.05)
    assert job["status"] == "done" and len(job["result"]["cases"]) == 2


def test_an_eval_job_takes_a_beir_set_as_its_queries_and_qrels(url: str, token: Callable[..., str]) -> None:
    ops = {"Authorization": f"Bearer {token(market='eu', sub='ops', scope='querywise:jobs')}"}
    eu = {"market": "eu"}
    queries = [{"_id": "q1", "text": "how long is the warranty on the Vela X3?", "session": eu},
               {"_id": "q2", "text": "Pico Buds battery", "session": eu}, {"_id": "q3", "text": "not judged", "session": eu}]
    qrels = "query-id\tcorpus-id\tscore\nq1\tx3-warranty\t1\nq2\tbuds-battery\t2\nq2\tshipping\t0\n"
    started = httpx.post(f"{url}/v1/eval", json={"cases": queries, "qrels": qrels, "metrics": ["recall@5"]}, headers=ops)
    job = _wait(url, started.headers["location"], ops)
    assert job["status"] == "done", job["error"]
    assert [c["id"] for c in job["result"]["cases"]] == ["q1", "q2"]
    unjudged = httpx.post(f"{url}/v1/eval", json={"cases": queries[2:], "qrels": qrels}, headers=ops)
    assert unjudged.status_code == 202, unjudged.text
    failed = _wait(url, unjudged.headers["location"], ops)
    assert failed["status"] == "failed" and "'q1' is judged but not among the queries" in failed["error"]
