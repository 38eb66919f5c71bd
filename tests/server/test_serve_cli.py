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

import httpx
import pytest

from querywise.demo import demo_file

pytestmark = pytest.mark.model  # each worker loads the packaged embedding model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "querywise", "serve", "-c", str(demo_file("querywise.toml")), "--port", str(port), *args],
                            env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
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


def test_two_workers_serve_plans_with_the_tokens_session_and_drain_on_sigterm(token: Callable[..., str], jwt_secret: str) -> None:
    proc, url = _start(["--workers", "2"], {"QUERYWISE_JWT_SECRET": jwt_secret})
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
