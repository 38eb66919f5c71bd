"""Who may ask, and how often: every route's first step (the API's and the workbench's).

The credentials are the request's headers (`server.auth`). The workbench's pages are opened by a
browser, which cannot add a bearer token to a link: after sign-in (`POST /ui/signin` with the
token, checked like any other) the token rides in an HttpOnly, SameSite=Strict cookie, read only
when the request has no Authorization header, and — for anything but GET — only with the
`X-Querywise-UI: 1` header that a page's script sends and a cross-site form cannot (no CORS is
configured), so the cookie can never be spent by another site.
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import Depends, Request
from limits import RateLimitItem, parse_many
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from querywise.server.auth import Authenticator, AuthError, Principal

__all__ = ["UI_COOKIE", "UI_HEADER", "Guard", "RefusedError", "Who", "principal"]

UI_COOKIE = "querywise_token"
UI_HEADER = "x-querywise-ui"


class RefusedError(Exception):
    """A request refused with `status` and a JSON body `{"error", "detail"}`."""

    def __init__(self, status: int, error: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.error, self.detail, self.headers = status, error, detail, headers or {}


class Guard:
    """The authenticator and the per-subject rate limits."""

    def __init__(self, authenticator: Authenticator | None, rate_limit: str | None, *, storage: str = "memory://",
                 insecure_scopes: frozenset[str] = frozenset(), failure_limit: str | None = None) -> None:
        self.authenticator = authenticator
        # With authentication off (`--insecure-no-auth`, a laptop) the one caller holds these grants
        # (the jobs scope: whoever reaches the port can do everything anyway); its session stays empty.
        self.insecure = Principal(subject="insecure-no-auth", scopes=insecure_scopes)
        # memory:// is per worker process (docs/service.md); a shared store holds across replicas
        self.limiter = MovingWindowRateLimiter(storage_from_string(storage))
        self.limits = parse_many(rate_limit) if rate_limit else []
        # Failed authentications, per client address (there is no subject to count them by).
        self.failure_limits = parse_many(failure_limit) if failure_limit else []

    def principal(self, request: Request) -> Principal:
        try:
            who = self.identify(request)
        except RefusedError as exc:
            # Failed authentications are counted per address and answered 429 past the limit. Valid
            # credentials from the same address still pass: behind a proxy every client shares one.
            if exc.status == 401:
                address = request.client.host if request.client is not None else "unknown"
                self._within(self.failure_limits, "failed", address, "auth_failure_limit")
            raise
        self._within(self.limits, "subject", who.subject, "rate_limit")
        return who

    def _within(self, limits: list[RateLimitItem], kind: str, key: str, setting: str) -> None:
        """429 when this request puts `key` over one of `limits`."""
        for item in limits:
            if not self.limiter.hit(item, kind, key):
                reset = self.limiter.get_window_stats(item, kind, key).reset_time
                raise RefusedError(429, "rate_limited", f"over {item} for this client ([server] {setting})",
                                   {"Retry-After": str(max(1, int(reset - time.time() + 0.999)))})

    def identify(self, request: Request) -> Principal:
        """The caller, not counted against its rate limit; 401 without valid credentials."""
        headers: dict[str, str] = dict(request.headers)  # lower-case keys; of repeated ones the first
        token = request.cookies.get(UI_COOKIE)
        if token and "authorization" not in headers and (request.method in ("GET", "HEAD") or headers.get(UI_HEADER) == "1"):
            headers["authorization"] = f"Bearer {token}"
        return self.verify(headers)

    def verify(self, headers: dict[str, str]) -> Principal:
        if self.authenticator is None:
            return self.insecure
        try:
            return self.authenticator.authenticate(headers)
        except AuthError as exc:
            raise RefusedError(401, "unauthorized", str(exc), {"WWW-Authenticate": "Bearer"}) from None


async def principal(request: Request) -> Principal:
    # async: run on the event loop (a JWT check and a rate-limit hit are microseconds), not handed
    # to the thread pool — each hand-off costs more than the work (bench/results/service_load.md).
    guard: Guard = request.app.state.guard
    return guard.principal(request)


Who = Annotated[Principal, Depends(principal)]
