"""The workbench over HTTP (a real uvicorn on 127.0.0.1): sign-in, the cookie's limits, who sees
what, labels saved to the file `triage --labels` reads and the report recounted."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from shop_deployment import shop_settings
from test_jobs import FAILURES

from querywise.config import ServerSettings
from querywise.corpus import Chunk
from querywise.index import build_index
from querywise.server import Authenticator, create_app, running
from querywise.server.guard import UI_COOKIE
from querywise.service import QueryWise
from querywise.triage import load_labels

UI = {"X-Querywise-UI": "1"}


@pytest.fixture
def served(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, jwt_secret: str) -> Iterator[tuple[str, Path]]:
    labels = tmp_path / "labels.jsonl"
    settings = shop_settings(tmp_path).model_copy(update={"server": ServerSettings(rate_limit=None, labels_file=labels)})
    with (build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as qw,
          running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as base):
        yield base, labels


@contextmanager
def _signed_in(url: str, token: str) -> Iterator[httpx.Client]:
    """A browser-like client: signed in once, the token in its cookie from then on."""
    with httpx.Client(base_url=url, follow_redirects=False) as client:
        answer = client.post("/ui/signin", json={"token": token})
        assert answer.status_code == 200, answer.text
        yield client


def _triaged(client: httpx.Client) -> str:
    started = client.post("/v1/triage", json={"failures": FAILURES, "k": 5, "context_k": 2}, headers=UI)
    assert started.status_code == 202, started.text
    job_id: str = started.json()["id"]
    deadline = time.monotonic() + 120
    while client.get(f"/v1/jobs/{job_id}").json()["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return job_id


def test_pages_send_a_stranger_to_sign_in_and_a_bad_token_gets_no_cookie(served: tuple[str, Path], token: Callable[..., str]) -> None:
    url, _ = served
    first = httpx.get(f"{url}/triage/some-job?bucket=ranking")
    assert first.status_code == 303 and first.headers["location"] == "/ui/signin?next=/triage/some-job%3Fbucket%3Dranking"
    assert httpx.get(f"{url}/ui/signin").status_code == 200
    forged = httpx.post(f"{url}/ui/signin", json={"token": token(market="eu", secret="not-the-secret-but-also-32-bytes-long")})
    assert forged.status_code == 401 and UI_COOKIE not in forged.cookies
    with _signed_in(url, token(market="eu", sub="ann")) as client:
        cookie = client.cookies[UI_COOKIE]
        assert "httponly" in client.post("/ui/signin", json={"token": token(market="eu", sub="ann")}).headers["set-cookie"].lower()
        home = client.get("/")
        assert home.status_code == 200 and "signed in as <b>ann</b>" in home.text and "market=eu" in home.text
        assert httpx.get(f"{url}/", cookies={UI_COOKIE: cookie + "x"}).status_code == 303  # a tampered cookie is no sign-in


def test_the_cookie_changes_nothing_without_the_page_header(served: tuple[str, Path], token: Callable[..., str]) -> None:
    url, _ = served
    with _signed_in(url, token(market="eu", sub="ops", scope="querywise:jobs")) as client:
        # A cross-site form could send the cookie with a POST, never the header: the cookie alone is no credential.
        bare = client.post("/v1/plan", json={"message": "warranty on the Vela X3?"})
        assert bare.status_code == 401
        planned = client.post("/v1/plan", json={"message": "warranty on the Vela X3?"}, headers=UI)
        assert planned.status_code == 200 and planned.json()["plan"]["access"]["conditions"] != []
        assert client.post("/ui/labels/any", json={"case_id": "f1", "label": "filler"}).status_code == 401


def test_triage_pages_need_the_jobs_grant_and_the_plan_inspector_does_not(served: tuple[str, Path], token: Callable[..., str]) -> None:
    url, _ = served
    with _signed_in(url, token(market="eu", sub="ann")) as user:
        refused = user.get("/triage")
        assert refused.status_code == 403 and "querywise:jobs" in refused.text
        assert user.get("/plan").status_code == 200
        assert user.post("/ui/reports", json={"report": {}}, headers=UI).status_code == 403


def test_a_label_saved_from_the_workbench_recounts_the_report_and_lands_in_the_labels_file(served: tuple[str, Path],
                                                                                          token: Callable[..., str]) -> None:
    url, labels = served
    with _signed_in(url, token(market="eu", sub="ops", scope="querywise:jobs")) as ops:
        job = _triaged(ops)
        page = ops.get(f"/triage/{job}")
        assert page.status_code == 200 and "Where the failures are repaired" in page.text and "f1" in page.text and "f2" in page.text
        result = ops.get(f"/v1/jobs/{job}").json()["result"]
        before = {c["id"]: c["bucket"] for c in result["cases"]}
        case = ops.get(f"/triage/{job}/case/f2")
        assert case.status_code == 200 and "Replacement cushions" in case.text  # the gold text, shown inside its chunk
        saved = ops.post(f"/ui/labels/{job}", json={"case_id": "f2", "bucket": "generation", "note": "the answer was in the top 2"}, headers=UI)
        assert saved.status_code == 200, saved.text
        body = saved.json()
        assert body["bucket"] == "generation" and body["source"] == "human" and body["agreement"]["labelled"] == 1
        assert body["buckets"]["generation"] == sum(1 for b in before.values() if b == "generation") + (before["f2"] != "generation")
        assert load_labels(labels) == {}  # an override only: no query-defect label for `triage --labels`
        ops.post(f"/ui/labels/{job}", json={"case_id": "f1", "label": "referent"}, headers=UI)
        assert load_labels(labels) == {"f1": "referent"}
        export = ops.get(f"/triage/{job}/export.json").json()
        assert {lab["id"] for lab in export["labels"]} == {"f1", "f2"} and export["agreement"]["labelled"] == 2
        assert next(c for c in export["cases"] if c["id"] == "f2")["bucket"] == "generation"
        assert ops.delete(f"/ui/labels/{job}/f2", headers=UI).json()["bucket"] == before["f2"]
        assert ops.post(f"/ui/labels/{job}", json={"case_id": "nope", "label": "filler"}, headers=UI).status_code == 404
        with _signed_in(url, token(market="eu", sub="someone-else", scope="querywise:jobs")) as other:
            assert other.get(f"/triage/{job}").status_code == 404  # a job is its starter's


def test_a_saved_report_opens_as_a_finished_job(served: tuple[str, Path], token: Callable[..., str]) -> None:
    url, _ = served
    with _signed_in(url, token(market="eu", sub="ops", scope="querywise:jobs")) as ops:
        report = ops.get(f"/v1/jobs/{_triaged(ops)}").json()["result"]
        opened = ops.post("/ui/reports", json={"report": report}, headers=UI)
        assert opened.status_code == 201 and ops.get(opened.json()["location"]).status_code == 200
        assert ops.post("/ui/reports", json={"report": {"cases": "no"}}, headers=UI).status_code == 422


@pytest.mark.model
def test_a_server_killed_while_labellers_save_leaves_a_valid_labels_file(tmp_path: Path, token: Callable[..., str], jwt_secret: str) -> None:
    """`querywise serve` in its own process, two labellers saving as fast as they can, SIGKILL:
    the file it leaves parses, and what was saved before the kill began is still in it."""
    import os
    import signal
    import subprocess
    import sys
    import threading

    from test_serve_cli import _free_port
    from triage_sample import small_report

    from querywise.demo import demo_file
    from querywise.triage.labels import read_labels

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "querywise", "serve", "-c", str(demo_file("querywise.toml")), "--port", str(port)],
                            cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1", "QUERYWISE_JWT_SECRET": jwt_secret},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "querywise serve did not start"
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with _signed_in(url, token(market="eu", sub="ops", scope="querywise:jobs")) as ops:
            job = ops.post("/ui/reports", json={"report": small_report()}, headers=UI).json()["id"]
            first = ops.post(f"/ui/labels/{job}", json={"case_id": "q1", "label": "referent", "note": "before the kill"}, headers=UI)
            assert first.status_code == 200
            cookie = ops.cookies[UI_COOKIE]
        saved = threading.Event()

        def label(case: str) -> None:
            with httpx.Client(base_url=url, cookies={UI_COOKIE: cookie}, headers=UI, timeout=5) as client:
                for i in range(10_000):
                    try:
                        client.post(f"/ui/labels/{job}", json={"case_id": case, "bucket": "generation", "note": "x" * (i % 500)})
                    except httpx.TransportError:
                        return  # the server is gone
                    saved.set()

        labellers = [threading.Thread(target=label, args=(c,)) for c in ("q2", "q3")]
        for t in labellers:
            t.start()
        assert saved.wait(30)
        time.sleep(0.5)  # saving in a tight loop from two threads: the kill lands mid-save more often than not
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        for t in labellers:
            t.join(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    labels = read_labels(tmp_path / "querywise-labels.jsonl")  # parses: the old file or the new one
    assert labels["q1"].label == "referent" and labels["q1"].note == "before the kill"
    assert {"q2", "q3"} & set(labels)


@pytest.mark.parametrize("next_", ["/\\evil.example/x", "/%09/evil.example", "/%5Cevil.example", "/\t/evil.example", "//evil.example",
                                   "https://evil.example", "/\n/evil.example"])
def test_sign_in_sends_back_only_to_a_path_of_this_origin(served: tuple[str, Path], next_: str) -> None:
    url, _ = served
    page = httpx.get(f"{url}/ui/signin", params={"next": next_}).text
    assert 'data-next="/"' in page, next_
    assert 'data-next="/triage/job?bucket=ranking"' in httpx.get(f"{url}/ui/signin", params={"next": "/triage/job?bucket=ranking"}).text


def test_a_labeller_cannot_remove_or_replace_another_s_label(served: tuple[str, Path], token: Callable[..., str]) -> None:
    url, labels = served
    with _signed_in(url, token(market="eu", sub="ann", scope="querywise:jobs")) as ann, \
            _signed_in(url, token(market="eu", sub="bob", scope="querywise:jobs")) as bob:
        ann_job, bob_job = _triaged(ann), _triaged(bob)
        assert ann.post(f"/ui/labels/{ann_job}", json={"case_id": "f2", "bucket": "generation"}, headers=UI).status_code == 200
        assert bob.delete(f"/ui/labels/{bob_job}/f2", headers=UI).status_code == 403
        assert bob.post(f"/ui/labels/{bob_job}", json={"case_id": "f2", "bucket": "ranking"}, headers=UI).status_code == 403
        assert bob.delete(f"/ui/labels/{bob_job}/no-such-case", headers=UI).status_code == 404  # not a 500
        assert '"by": "ann"' in labels.read_text(encoding="utf-8").replace('":"', '": "')
        assert ann.delete(f"/ui/labels/{ann_job}/f2", headers=UI).status_code == 200
