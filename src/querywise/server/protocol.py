"""uvicorn's HTTP/1.1 protocol with a deadline on the request head.

uvicorn bounds the idle time between two requests of a connection (`timeout_keep_alive`), but
nothing bounds the time a client takes to send a request's line and headers: its keep-alive timer
is only armed after a response and is cancelled by any byte that arrives, and the first request of
a connection has none (uvicorn issues #157 and #160, open). So 600 connections that each send half
a request line, or one header byte every few seconds, stay open for good, each holding a socket
and a parser (slowloris). `HeadDeadline` closes a connection whose request head is not complete
within `[server] request_head_timeout_s` of the connection being made, or of its previous response
being sent; once the head is in, the request runs as long as it needs.

It subclasses uvicorn's httptools protocol (the one `http="auto"` picks, httptools being a
dependency) and is handed to uvicorn as `http=head_deadline(seconds)`: a `functools.partial` of a
module-level class, so it pickles into the worker processes of `--workers N`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeadDeadline", "head_deadline"]

log = logging.getLogger("querywise.server")


class HeadDeadline(HttpToolsProtocol):
    """A connection that must finish each request head within `head_timeout_s`."""

    def __init__(self, *args: Any, head_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.head_timeout_s = head_timeout_s
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)  # the next request's head is already in: nothing to wait for
        super().on_response_complete()
        if not pipelined:
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expired(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            # No response: the client has not finished asking, and a 408 would be read as the
            # answer to whatever it sends next on a connection being closed anyway.
            log.info("closed a connection whose request head was not complete within %g s", self.head_timeout_s,
                     extra={"client": f"{self.client[0]}:{self.client[1]}" if self.client else None})
            self.transport.close()


def head_deadline(head_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's `http=` option: `HeadDeadline` with its deadline (typed as the class uvicorn
    expects; uvicorn only calls it)."""
    return cast(type[asyncio.Protocol], functools.partial(HeadDeadline, head_timeout_s=head_timeout_s))
