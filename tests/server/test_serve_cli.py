"""`querywise serve` as a user starts it: a process with two workers, JSON logs, SIGTERM drains."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

import querywise
from querywise.demo import demo_file

pytestmark = pytest.mark.model  # each worker loads the packaged embedding model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start(args: list[str], env: dict[str, str], cwd: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    # the querywise under test, wherever the process starts (a relative PYTHONPATH would not follow cwd)
    path = os.pathsep.join([str(Path(querywise.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "querywise", "serve", "-c", str(demo_file("querywise.toml")), "--port", str(port), *args],
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path, **env}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True, cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"querywise serve did not become ready: {proc.communicate()[1][-2000:]}")


def test_two_workers_serve_plans_with_the_tokens_session_and_drain_on_sigterm(tmp_path: Path, token: Callable[..., str], jwt_secret: str) -> None:
    proc, url = _start(["--workers", "2"], {"QUERYWISE_JWT_SECRET": jwt_secret}, cwd=tmp_path)  # its jobs file lands there
    try:
        for _ in range(6):  # spread over the workers
            r = httpx.post(f"{url}/v1/plan", json={"message": "How long is the warranty on the Halden Solace 7?"},
                           headers={"Authorization": f"Bearer {token(market='eu')}"}, timeout=30)
            assert r.status_code == 200 and r.json()["plan"]["access"]["conditions"][0]["value"] == "eu"
        assert httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, timeout=30).status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr[-2000:]
    records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)  # JSON lines
    assert any("Shutting down" in r["message"] or "Finished server process" in r["message"] for r in records)


def test_without_a_secret_it_refuses_to_start_and_insecure_says_so_loudly() -> None:
    env = {k: v for k, v in os.environ.items() if k != "QUERYWISE_JWT_SECRET"}
    done = subprocess.run([sys.executable, "-m", "querywise", "serve", "-c", str(demo_file("querywise.toml")), "--port", str(_free_port())],
                          env={**env, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "QUERYWISE_JWT_SECRET" in done.stderr
    proc, url = _start(["--insecure-no-auth"], {})
    try:
        assert httpx.post(f"{url}/v1/plan", json={"message": "hello"}, timeout=30).status_code in (200, 403)  # served; no session
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert "AUTHENTICATION IS OFF" in stderr


def test_with_two_workers_a_job_is_seen_by_every_poll_and_half_sent_heads_are_closed(tmp_path: Path, token: Callable[..., str],
                                                                                     jwt_secret: str) -> None:
    proc, url = _start(["--workers", "2"], {"QUERYWISE_JWT_SECRET": jwt_secret}, cwd=tmp_path)
    held: list[socket.socket] = []
    try:
        opened = time.monotonic()
        for _ in range(20):  # half a request line each: [server] request_head_timeout_s (10 s) closes them, in whichever worker took them
            sock = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=5)
            sock.sendall(b"GET /healthz HT")
            held.append(sock)
        ops = {"Authorization": f"Bearer {token(market='eu', sub='ops', scope='querywise:jobs')}"}
        cases = [{"id": "c1", "message": "How long is the warranty on the Halden Solace 7?", "relevant": ["solace-7-warranty"], "session": {"market": "eu"}}]
        started = httpx.post(f"{url}/v1/eval", json={"cases": cases, "metrics": ["recall@5"]}, headers=ops, timeout=30)
        assert started.status_code == 202, started.text
        polls = []
        for _ in range(40):  # a new connection each: the two workers share them
            polls.append(httpx.get(f"{url}{started.headers['location']}", headers=ops, timeout=30))
            time.sleep(0.05)
        assert [r.status_code for r in polls].count(404) == 0, [r.text for r in polls if r.status_code != 200][:3]
        assert {r.json()["id"] for r in polls} == {started.json()["id"]}
        other = {"Authorization": f"Bearer {token(market='eu', sub='mallory', scope='querywise:jobs')}"}
        assert all(httpx.get(f"{url}{started.headers['location']}", headers=other, timeout=30).status_code == 404 for _ in range(6))
        closed = []
        for sock in held:
            sock.settimeout(max(0.1, opened + 10 + 5 - time.monotonic()))
            try:
                closed.append(sock.recv(1024) == b"")
            except TimeoutError:
                closed.append(False)
        assert all(closed), f"{closed.count(False)} of {len(held)} half-sent heads still open 15 s after they were sent"
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    finally:
        for sock in held:
            sock.close()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert (tmp_path / "querywise-jobs.sqlite").is_file()  # beside the labels file, in the folder the service started in
