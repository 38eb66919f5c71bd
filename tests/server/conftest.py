"""Tokens for the service tests; the server is `querywise.server.running` (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SECRET = "test-secret-for-hs256-at-least-32-bytes!"


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
