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


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _raw_token(header: dict[str, object], payload: bytes, sign: Callable[[bytes], bytes]) -> str:
    head = _b64(json.dumps(header).encode()) + "." + _b64(payload)
    return head + "." + _b64(sign(head.encode()))


class _Keys:
    """An RSA key pair (the server's) and an EC one (an attacker's, or the other half of RS256+ES256)."""

    def __init__(self) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec, rsa

        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    def public(self, form: str) -> bytes:
        from cryptography.hazmat.primitives import serialization as s

        if form == "openssh":
            return self.rsa.public_key().public_bytes(s.Encoding.OpenSSH, s.PublicFormat.OpenSSH)
        return self.rsa.public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo)


@pytest.fixture(scope="module")
def keys() -> _Keys:
    return _Keys()


def _bad_tokens(keys: _Keys, public: bytes) -> dict[str, str]:
    """Tokens no RS256 + ES256 deployment holding the RSA public key may accept, each once a 500 or a
    path PyJWT does not map to its own errors."""
    import jwt

    claims = {"sub": "mallory", "market": "eu", "exp": int(time.time()) + 60}
    rs256, es256 = jwt.get_algorithm_by_name("RS256"), jwt.get_algorithm_by_name("ES256")
    good = json.dumps(claims).encode()
    return {
        "ES256 by another key": jwt.encode(claims, keys.ec, algorithm="ES256"),
        "ES256 with a kid naming the RSA key": jwt.encode(claims, keys.ec, algorithm="ES256", headers={"kid": "server-rsa"}),
        "HS256 keyed with the public key": _raw_token({"alg": "HS256"}, good, lambda m: hmac.new(public, m, hashlib.sha256).digest()),
        "ES256 header, RSA signature": _raw_token({"alg": "ES256"}, good, lambda m: rs256.sign(m, keys.rsa)),
        "RS256 header, a 1-byte signature": _raw_token({"alg": "RS256"}, good, lambda m: b"x"),
        "ES256 header, a 132-byte signature": _raw_token({"alg": "ES256"}, good, lambda m: b"\xff" * 132),
        "exp Infinity, signed by the server's key": _raw_token({"alg": "RS256"}, b'{"market": "eu", "exp": Infinity}', lambda m: rs256.sign(m, keys.rsa)),
        "exp NaN, signed by the server's key": _raw_token({"alg": "RS256"}, b'{"market": "eu", "exp": NaN}', lambda m: rs256.sign(m, keys.rsa)),
        "exp a list, ES256": _raw_token({"alg": "ES256"}, b'{"market": "eu", "exp": [1]}', lambda m: es256.sign(m, keys.ec)),
        "alg a list": _raw_token({"alg": ["RS256"]}, good, lambda m: rs256.sign(m, keys.rsa)),
        "header a list": _b64(b"[1]") + "." + _b64(good) + "." + _b64(b"x"),
    }


@pytest.mark.parametrize("form", ["pem", "openssh"])
def test_no_token_against_an_rs256_es256_deployment_with_an_rsa_key_is_more_than_a_bad_token(form: str, keys: _Keys, tmp_path: Path) -> None:
    import jwt

    public = keys.public(form)
    (tmp_path / "public.key").write_bytes(public)
    auth = Authenticator(ServerSettings(jwt_algorithms=["RS256", "ES256"], jwt_public_key=tmp_path / "public.key"), ACCESS)
    answers: dict[str, str] = {}
    for case, bad in _bad_tokens(keys, public).items():
        try:  # any other exception fails the test: the service would answer it 500
            auth.authenticate(_bearer(bad))
            answers[case] = "accepted"
        except AuthError as exc:
            answers[case] = "invalid token" if str(exc).startswith("invalid token") else str(exc)
    assert set(answers.values()) == {"invalid token"}, answers
    good = jwt.encode({"sub": "alice", "market": "eu", "exp": int(time.time()) + 60}, keys.rsa, algorithm="RS256")
    assert auth.authenticate(_bearer(good)).session == {"market": "eu"}


def test_a_key_file_that_cannot_verify_the_configured_algorithms_stops_the_start(keys: _Keys, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec

    files = {
        "private.pem": (keys.rsa.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()), ["RS256"], "private key"),
        "rsa.pem": (keys.public("pem"), ["ES256"], "verifies none"),
        "p384.pem": (ec.generate_private_key(ec.SECP384R1()).public_key().public_bytes(s.Encoding.PEM, s.PublicFormat.SubjectPublicKeyInfo),
                     ["ES256"], "secp384r1"),
        "notes.txt": (b"not a key", ["RS256"], "not a PEM or OpenSSH public key"),
    }
    for name, (data, algorithms, says) in files.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(RuntimeError, match=says):
            Authenticator(ServerSettings(jwt_algorithms=algorithms, jwt_public_key=tmp_path / name), ACCESS)
