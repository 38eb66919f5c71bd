"""`[server]`: `querywise serve`'s address, authentication and limits."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from querywise.config._section import _Section

JWTAlgorithm = Literal["HS256", "RS256", "ES256"]


def _hs256() -> list[JWTAlgorithm]:
    return ["HS256"]


class ServerSettings(_Section):
    """`querywise serve` (`[server]`): where it listens, what it accepts, and whom.

    The session (the access constraints) comes from authentication only: a JWT whose claims named
    like the `[access]` session keys become the session — HS256 with the secret in the environment
    variable `jwt_secret_env`, or RS256 / ES256 with the PEM public key `jwt_public_key` — or, with
    `auth = "gateway"`, a session header set by a trusted gateway and signed (HMAC-SHA256) with the
    secret in `gateway_secret_env`. Secrets are never in the file, only the names of their variables."""

    host: str = "127.0.0.1"  # the address uvicorn binds
    port: int = Field(8000, ge=0, le=65535)  # the port uvicorn binds (0: any free port)
    workers: int = Field(1, ge=1, le=64)  # uvicorn worker processes
    auth: Literal["jwt", "gateway"] = "jwt"  # "jwt": a bearer token; "gateway": a session header signed by your gateway
    jwt_algorithms: list[JWTAlgorithm] = Field(default_factory=_hs256, min_length=1)  # the algorithms a token may be signed with
    jwt_secret_env: str = "QUERYWISE_JWT_SECRET"  # the environment variable holding the HS256 secret
    jwt_public_key: Path | None = None  # a public key (PEM or OpenSSH): RSA for RS256, P-256 for ES256; checked at start
    jwt_audience: str | None = None  # required in the token when set
    jwt_issuer: str | None = None  # when set, a token's iss must equal it
    jwt_leeway_s: float = Field(30.0, ge=0, le=600)  # clock skew allowed on exp / nbf
    gateway_secret_env: str = "QUERYWISE_GATEWAY_SECRET"  # the environment variable holding the gateway's HMAC secret
    gateway_header: str = "x-querywise-session"  # base64url JSON {"session": {...}, "exp": unix seconds}
    gateway_signature_header: str = "x-querywise-signature"  # hex HMAC-SHA256 of the session header's value
    max_body_bytes: int = Field(262_144, ge=1024)  # a larger request is 413
    rate_limit: str | None = "100/second"  # per client (the token's subject), `limits` notation; None: no limit
    # Failed authentications per client address (`limits` notation; None: no limit): a 401 costs a
    # signature check, and forged tokens must not be tried at line rate.
    auth_failure_limit: str | None = "30/minute"
    # The Host headers served (a port is ignored; "*.example.com" matches its subdomains, "*" any),
    # in every mode: a page that rebinds its own DNS name to 127.0.0.1 must not reach the service
    # (least of all with --insecure-no-auth). Behind a proxy, list the names it forwards.
    allowed_hosts: list[str] = Field(default_factory=lambda: ["localhost", "127.0.0.1", "[::1]"], min_length=1)
    # Where the rate-limit windows live: "memory://" is per worker process; replicas behind a load
    # balancer share one store ("redis://host:6379", "memcached://host:11211"; the client library
    # is then the user's to install), so a client's limit holds across all of them.
    rate_limit_storage: str = "memory://"
    graceful_shutdown_s: float = Field(10.0, ge=0)  # in-flight requests get this long to finish on SIGTERM
    # A connection whose request line and headers are not all in this long after it opened (or
    # after its previous response) is closed: half-sent heads must not hold sockets for good.
    request_head_timeout_s: float = Field(10.0, gt=0, le=600)
    # A request whose body is not all in this long after its head is answered 408 and closed.
    request_body_timeout_s: float = Field(60.0, gt=0, le=3600)
    # The grant (a token's `scope` claim) that may start triage and eval jobs: they read passages
    # whatever the caller's session is, so they are an operator's, not every user's.
    jobs_scope: str = "querywise:jobs"
    max_queued_jobs: int = Field(4, ge=1, le=1000)
    # The workbench's labels (JSONL, the format `querywise triage --labels` reads), relative to the
    # directory the service starts in; every worker saves to the same file under a lock.
    labels_file: Path = Path("querywise-labels.jsonl")
    # The triage and eval jobs (SQLite, WAL), shared by every worker process so that a job's poll
    # may land on any of them. None: with one worker, in its memory; with --workers N,
    # querywise-jobs.sqlite beside labels_file.
    jobs_file: Path | None = None

    @model_validator(mode="after")
    def _keys_for_algorithms(self) -> ServerSettings:
        if self.auth == "jwt" and any(a != "HS256" for a in self.jwt_algorithms) and self.jwt_public_key is None:
            raise ValueError("[server] jwt_algorithms RS256 / ES256 need jwt_public_key = 'path/to/public.pem'")
        from limits.storage import SCHEMES

        if self.rate_limit_storage.split("://", 1)[0] not in SCHEMES:
            raise ValueError(f"[server] rate_limit_storage {self.rate_limit_storage!r}: expected one of "
                             f"{', '.join(sorted(k + '://' for k in SCHEMES))}")
        for pattern in self.allowed_hosts:
            if "*" in pattern[1:] or (pattern.startswith("*") and pattern != "*" and not pattern.startswith("*.")):
                raise ValueError(f"[server] allowed_hosts {pattern!r}: a wildcard is '*' or leads a domain, as in '*.example.com'")
        from limits import parse_many

        for name, limit in (("rate_limit", self.rate_limit), ("auth_failure_limit", self.auth_failure_limit)):
            try:
                if limit is not None:
                    parse_many(limit)
            except ValueError:
                raise ValueError(f"[server] {name} {limit!r}: expected e.g. '100/second' or '20/second;1000/minute'") from None
        return self
