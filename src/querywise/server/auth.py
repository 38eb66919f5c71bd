"""Who is asking, and so what they may see: the session comes from authentication, never from
the request body.

Two ways in (`[server] auth`):

- `"jwt"`: `Authorization: Bearer <token>`, verified with PyJWT — the signature (HS256 with the
  secret in `$QUERYWISE_JWT_SECRET`, or RS256 / ES256 with the configured public key, loaded once at
  start and refused there when it can verify none of `jwt_algorithms`), `exp`
  (required), `nbf`, and `aud` / `iss` when configured. The claims named like the `[access]`
  session keys become the session; other claims are ignored.
- `"gateway"`: a trusted gateway that authenticated the user sets `x-querywise-session` (base64url
  JSON `{"session": {...}, "exp": unix seconds, "sub", "scope"}`) and `x-querywise-signature` (hex HMAC-SHA256 of
  that header's value with the shared secret). An unsigned, tampered or expired header is refused.

Anything else is `AuthError` (the service answers 401): a request without valid credentials never
gets a plan with empty access. A session value that is not a non-empty string, a required access
key missing from the claims, a gateway session key the deployment does not know, and a JWT claim
that reads like an access key without being one ("Market", "market ", a Cyrillic look-alike:
`understand.access.near_misses`) are refused too. A caller without `sub` is its own subject (the
credential, hashed), never one shared "anonymous".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_public_key, load_ssh_public_key

from querywise.config import AccessSettings, JWTAlgorithm, ServerSettings
from querywise.understand.access import near_misses

__all__ = ["AuthError", "Authenticator", "Principal", "sign_gateway_session"]

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class AuthError(Exception):
    """No valid credentials; the message says why (for the 401 body: never the secret or the token)."""


@dataclass(frozen=True)
class Principal:
    """The authenticated caller: a subject (for rate limits and logs) and its session."""

    subject: str
    session: dict[str, str] = field(default_factory=dict)
    scopes: frozenset[str] = frozenset()  # OAuth-style grants: `[server] jobs_scope` starts triage and eval jobs


def _secret(env: str, what: str) -> bytes:
    value = os.environ.get(env, "")
    if not value:
        raise RuntimeError(f"{what}: set the environment variable {env} (the secret is never read from the config file)")
    return value.encode("utf-8")


class Authenticator:
    """Turns request headers into a `Principal`, or raises `AuthError`. Reads its secret or key once.

    >>> Authenticator(ServerSettings(), AccessSettings(fields={"market": "markets"}))  # doctest: +SKIP
    """

    def __init__(self, server: ServerSettings, access: AccessSettings) -> None:
        self.server, self.access = server, access
        self._algorithms: list[str] = list(server.jwt_algorithms)  # narrowed to what a public key can verify
        if server.auth == "gateway":
            self._key: bytes | PublicKey = _secret(server.gateway_secret_env, "[server] auth = 'gateway'")
        elif server.jwt_algorithms == ["HS256"]:
            self._key = _secret(server.jwt_secret_env, "[server] auth = 'jwt' with HS256")
        else:
            if "HS256" in server.jwt_algorithms:  # a public key as an HMAC secret is the classic confusion attack
                raise RuntimeError("[server] jwt_algorithms: HS256 cannot be mixed with RS256 / ES256")
            assert server.jwt_public_key is not None  # ServerSettings checks it
            self._key, self._algorithms = _public_key(server.jwt_public_key, server.jwt_algorithms)

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        if self.server.auth == "gateway":
            subject, claims, scopes = self._gateway(headers)
        else:
            subject, claims = self._jwt(headers)
            scopes = claims.get("scope", claims.get("scp"))
        return Principal(subject=subject, session=self._session(claims), scopes=_scopes(scopes))

    def _jwt(self, headers: Mapping[str, str]) -> tuple[str, Mapping[str, object]]:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("missing bearer token (Authorization: Bearer <JWT>)")
        s = self.server
        try:
            claims = jwt.decode(
                token.strip(), self._key, algorithms=self._algorithms, audience=s.jwt_audience, issuer=s.jwt_issuer,
                leeway=s.jwt_leeway_s, options={"require": ["exp"], "verify_aud": s.jwt_audience is not None},
            )
        except jwt.ExpiredSignatureError:
            raise AuthError("token expired") from None
        # The one place a token is decoded: whatever it holds (an algorithm the key cannot verify, a
        # signature of the wrong length, a claim of the wrong type) is a bad token, never a 500.
        # PyJWT raises its own errors for most; cryptography's ValueError / TypeError for a key or a
        # signature it cannot use are caught too, as PyJWT lets some through.
        except (jwt.PyJWTError, ValueError, TypeError) as exc:
            raise AuthError(f"invalid token: {exc}") from None
        return _subject(claims.get("sub"), token.strip()), claims

    def _gateway(self, headers: Mapping[str, str]) -> tuple[str, Mapping[str, object], object]:
        s = self.server
        value, signature = headers.get(s.gateway_header, ""), headers.get(s.gateway_signature_header, "")
        if not value or not signature:
            raise AuthError(f"missing gateway headers ({s.gateway_header}, {s.gateway_signature_header})")
        assert isinstance(self._key, bytes)
        expected = hmac.new(self._key, value.encode("utf-8"), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature.strip().lower()):
            raise AuthError("gateway session header: bad signature")
        try:
            body = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
        except (ValueError, binascii.Error):
            raise AuthError("gateway session header: not base64url JSON") from None
        exp = body.get("exp") if isinstance(body, dict) else None
        # json reads NaN and Infinity: an exp that never compares as past would never expire
        if not isinstance(body, dict) or not isinstance(body.get("session"), dict) or not _finite(exp):
            raise AuthError('gateway session header: expected {"session": {...}, "exp": unix seconds}')
        if body["exp"] + s.jwt_leeway_s < time.time():
            raise AuthError("gateway session header expired")
        session = body["session"]
        # The header carries a session and nothing else: a key the deployment does not know is refused, not skipped
        if unknown := sorted(k for k in session if k not in self.access.fields):
            raise AuthError(f"gateway session: unknown key(s) {', '.join(map(repr, unknown))} (keys are matched exactly)")
        return _subject(body.get("sub"), value), session, body.get("scope")

    def _session(self, claims: Mapping[str, object]) -> dict[str, str]:
        # A claim that only nearly names an access key ("Family", a Cyrillic look-alike, a trailing
        # space) is refused: skipped as unknown, it would drop an optional field's constraint.
        if near := near_misses(claims, self.access):
            raise AuthError(f"credentials carry {', '.join(map(repr, near))}, which is not an access key but reads like one "
                            f"(keys are matched exactly: {', '.join(self.access.fields)})")
        session: dict[str, str] = {}
        for key in self.access.fields:
            value = claims.get(key)
            if value is None:
                if key not in self.access.optional:
                    raise AuthError(f"credentials carry no {key!r} (a required access key)")
                continue
            if not isinstance(value, str) or not value.strip():
                raise AuthError(f"credentials' {key!r} must be a non-empty string")
            session[key] = value
        return session


def _public_key(path: Path, algorithms: list[JWTAlgorithm]) -> tuple[PublicKey, list[str]]:
    """The key `jwt_public_key` holds, loaded once (PEM or OpenSSH), and the configured algorithms
    it can verify: an RSA key RS256, a P-256 key ES256. PyJWT would parse the file again for every
    token as whatever the token's header names, and some mismatches (an OpenSSH RSA key read as
    ES256, a private key where a public one belongs) escape it as errors of another kind."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RuntimeError(f"[server] jwt_public_key {path}: {exc.strerror}") from None
    if b"PRIVATE KEY" in data:
        raise RuntimeError(f"[server] jwt_public_key {path} holds a private key: give the service only the public key")
    try:
        key = load_ssh_public_key(data) if data.lstrip().startswith((b"ssh-", b"ecdsa-")) else load_pem_public_key(data)
    except (ValueError, TypeError) as exc:  # cryptography's "could not parse" and "unsupported key type"
        raise RuntimeError(f"[server] jwt_public_key {path}: not a PEM or OpenSSH public key ({exc})") from None
    serves: list[str] = []
    if isinstance(key, rsa.RSAPublicKey):
        serves = ["RS256"]
    elif isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP256R1):
        serves = ["ES256"]
    usable: list[str] = [a for a in algorithms if a in serves]
    if not usable:
        kind = "an RSA" if isinstance(key, rsa.RSAPublicKey) else f"an EC ({key.curve.name})" if isinstance(key, ec.EllipticCurvePublicKey) else type(key).__name__
        raise RuntimeError(f"[server] jwt_public_key {path} holds {kind} key, which verifies none of "
                           f"jwt_algorithms {algorithms} (RS256 needs an RSA key, ES256 a P-256 one)")
    assert isinstance(key, PublicKey)
    return key, usable


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _subject(sub: object, credential: str) -> str:
    """Who the caller is, for rate limits and job ownership: the `sub` claim, else the credential
    itself (hashed), so that callers without `sub` never share one bucket or one owner."""
    if isinstance(sub, str) and sub.strip():
        return sub
    return "credential:" + hashlib.sha256(credential.encode("utf-8")).hexdigest()[:24]


def _scopes(value: object) -> frozenset[str]:
    """A `scope` claim: a space-separated string (RFC 8693 / OAuth 2) or a list of strings."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()


def sign_gateway_session(session: Mapping[str, str], secret: str, *, ttl_s: float = 60.0, subject: str | None = None,
                         scope: str | None = None, server: ServerSettings | None = None) -> dict[str, str]:
    """The two headers a gateway sets for `session` (what a gateway plugin or a test does), named
    as `server` (default settings) names them."""
    body: dict[str, object] = {"session": dict(session), "exp": int(time.time() + ttl_s)}
    if subject is not None:
        body["sub"] = subject
    if scope is not None:
        body["scope"] = scope
    value = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode("utf-8")).decode("ascii").rstrip("=")
    signature = hmac.new(secret.encode("utf-8"), value.encode("utf-8"), hashlib.sha256).hexdigest()
    s = server or ServerSettings()
    return {s.gateway_header: value, s.gateway_signature_header: signature}
