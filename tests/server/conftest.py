"""A real uvicorn server on 127.0.0.1 (an ephemeral port) in front of the shop deployment."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI

SECRET = "test-secret-for-hs256-at-least-32-bytes!"


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 in a thread; yields its base URL; stops it (draining) after."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture
def jwt_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("QUERYWISE_JWT_SECRET", SECRET)
    return SECRET


@pytest.fixture
def token(jwt_secret: str) -> Callable[..., str]:
    """`token(market="eu", sub="alice", exp_in=60, secret=..., **claims)`: an HS256 JWT."""
    import jwt

    def make(*, secret: str = jwt_secret, exp_in: float = 60, algorithm: str = "HS256", key: Any = None, **claims: Any) -> str:
        body = {"sub": "alice", "exp": int(time.time() + exp_in), **claims}
        return jwt.encode(body, key if key is not None else secret, algorithm=algorithm)

    return make


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path
