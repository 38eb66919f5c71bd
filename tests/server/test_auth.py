"""The authenticator alone: what a JWT or a gateway header becomes, and every near miss it refuses."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from querywise.config import AccessSettings, ServerSettings
from querywise.server.auth import Authenticator, AuthError, sign_gateway_session

# An optional field: a claim that misses it silently would search every family.
ACCESS = AccessSettings(fields={"market": "markets", "family": "family"}, optional=["family"])
GATEWAY_SECRET = "gateway-shared-secret"
NEAR_MISSES = ["Family", "FAMILY", "famіly", "family ", " family", "fam_ily", "famil\u200by"]  # "famіly": Cyrillic і


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.mark.parametrize("key", NEAR_MISSES)
def test_a_jwt_claim_that_reads_like_an_access_key_is_refused(key: str, token: Callable[..., str]) -> None:
    auth = Authenticator(ServerSettings(), ACCESS)
    with pytest.raises(AuthError, match="not an access key but reads like one"):
        auth.authenticate(_bearer(token(market="eu", **{key: "headphones"})))
    assert auth.authenticate(_bearer(token(market="eu", family="headphones"))).session == {"market": "eu", "family": "headphones"}
    assert auth.authenticate(_bearer(token(market="eu", iss_tier="gold"))).session == {"market": "eu"}  # other claims still ignored


@pytest.mark.parametrize("key", [*NEAR_MISSES, "tenant"])
def test_a_gateway_session_key_the_deployment_does_not_know_is_refused(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYWISE_GATEWAY_SECRET", GATEWAY_SECRET)
    auth = Authenticator(ServerSettings(auth="gateway"), ACCESS)
    with pytest.raises(AuthError, match="unknown key"):
        auth.authenticate(sign_gateway_session({"market": "eu", key: "headphones"}, GATEWAY_SECRET, subject="carol"))


def _signed(body: str) -> dict[str, str]:
    value = base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")
    return {"x-querywise-session": value, "x-querywise-signature": hmac.new(GATEWAY_SECRET.encode(), value.encode(), hashlib.sha256).hexdigest()}


@pytest.mark.parametrize("exp", ["NaN", "Infinity", "-Infinity", "true", '"9999999999"'])
def test_a_gateway_exp_that_is_not_a_finite_time_is_refused(exp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYWISE_GATEWAY_SECRET", GATEWAY_SECRET)
    auth = Authenticator(ServerSettings(auth="gateway"), ACCESS)
    with pytest.raises(AuthError, match="expected"):
        auth.authenticate(_signed('{"session": {"market": "eu"}, "exp": ' + exp + '}'))
    assert auth.authenticate(_signed(json.dumps({"session": {"market": "eu"}, "exp": time.time() + 60}))).session == {"market": "eu"}


def test_callers_without_sub_are_each_their_own_subject(token: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    auth = Authenticator(ServerSettings(), ACCESS)
    one, two = (auth.authenticate(_bearer(token(sub="", market=m))).subject for m in ("eu", "us"))
    assert one != two and "anonymous" not in (one, two)
    assert auth.authenticate(_bearer(token(sub="alice", market="eu"))).subject == "alice"
    monkeypatch.setenv("QUERYWISE_GATEWAY_SECRET", GATEWAY_SECRET)
    gateway = Authenticator(ServerSettings(auth="gateway"), ACCESS)
    a, b = (gateway.authenticate(sign_gateway_session({"market": m}, GATEWAY_SECRET)).subject for m in ("eu", "us"))
    assert a != b


def test_an_es256_token_against_an_rsa_key_is_a_bad_token(tmp_path: Path) -> None:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "public.pem"
    pem.write_bytes(rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    auth = Authenticator(ServerSettings(jwt_algorithms=["RS256", "ES256"], jwt_public_key=pem), ACCESS)
    es = jwt.encode({"sub": "mallory", "market": "eu", "exp": int(time.time()) + 60}, ec.generate_private_key(ec.SECP256R1()), algorithm="ES256")
    with pytest.raises(AuthError, match="invalid token"):
        auth.authenticate(_bearer(es))
