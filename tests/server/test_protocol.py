"""The request-head deadline against a real uvicorn on 127.0.0.1: a connection that does not finish
its request line and headers in time is closed, whatever else it does; the service keeps answering."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI

from querywise.server import running

HEAD_S = 0.5  # [server] request_head_timeout_s for these tests


@pytest.fixture
def url() -> Iterator[str]:
    app = FastAPI()

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/slow")
    async def slow() -> dict[str, str]:
        await asyncio.sleep(3 * HEAD_S)  # longer than the head's deadline: a request, once in, is not cut
        return {"status": "done"}

    app.state.request_head_timeout_s = HEAD_S  # as create_app sets it from [server]
    with running(app) as base:
        yield base


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes the connection (EOF) within `seconds`, answering nothing."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_half_sent_heads_are_closed_within_the_deadline_and_the_service_keeps_answering(url: str) -> None:
    partial = [b"GET /healthz HT", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a", b"", b"POST /v1/plan HTTP/1.1\r\n"]
    held = []
    for i in range(100):
        sock = _connect(url)
        sock.sendall(partial[i % len(partial)])
        held.append(sock)
    started = time.monotonic()
    assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200  # the held connections do not block it
    try:
        closed = [_closed_within(s, max(0.1, started + HEAD_S + 2.0 - time.monotonic())) for s in held]
    finally:
        for s in held:
            s.close()
    assert all(closed), f"{closed.count(False)} of {len(closed)} half-sent heads still open after {HEAD_S + 2.0} s"
    assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200


def test_a_head_trickled_byte_by_byte_is_cut_at_the_deadline_not_at_each_pause(url: str) -> None:
    sock = _connect(url)
    started = time.monotonic()
    try:
        for byte in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n":  # one byte every 0.1 s: never idle for long
            sock.sendall(bytes([byte]))
            time.sleep(0.1)
            if time.monotonic() - started > HEAD_S + 1.0:
                break
        assert _closed_within(sock, 1.0)
    except (BrokenPipeError, ConnectionResetError):
        pass  # closed while we wrote: what the test wants
    finally:
        sock.close()
    assert time.monotonic() - started < HEAD_S + 2.0


def test_the_deadline_covers_each_head_of_a_kept_alive_connection_but_not_the_request_it_starts(url: str) -> None:
    with httpx.Client(timeout=10) as client:
        assert client.get(f"{url}/slow").json() == {"status": "done"}  # runs 3x the head deadline: not cut
    sock = _connect(url)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHo")  # the next request on the same connection, half sent
        assert _closed_within(sock, HEAD_S + 2.0)
    finally:
        sock.close()
    # in pieces, within the deadline: answered
    sock = _connect(url)
    try:
        for piece in (b"GET /healthz HT", b"TP/1.1\r\nHost: 127.0", b".0.1\r\n\r\n"):
            sock.sendall(piece)
            time.sleep(HEAD_S / 5)
        sock.settimeout(5)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    finally:
        sock.close()
