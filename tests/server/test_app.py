"""The service through a real uvicorn server on 127.0.0.1: every endpoint, authentication, the
body that tries to carry access, the limits (413, 429), the metrics."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from shop_deployment import shop_settings

from querywise.config import IdentifierRule, LimitsSettings, ServerSettings, Settings, load_settings
from querywise.corpus import Chunk
from querywise.demo import demo_corpus, demo_file
from querywise.index import Index, build_index
from querywise.server import Authenticator, create_app, running, sign_gateway_session
from querywise.service import QueryWise


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Iterator[Index]:
    with build_index(shop, tmp_path / "ix", settings=shop_settings(tmp_path), embedder=hash_embedder) as ix:
        yield ix


def _settings(tmp_path: Path, **server: Any) -> Settings:
    s = shop_settings(tmp_path)
    return s.model_copy(update={"server": ServerSettings(**{"rate_limit": None, **server}), "limits": LimitsSettings(max_message_chars=500)})


@pytest.fixture
def service(tmp_path: Path, index: Index, jwt_secret: str) -> Iterator[str]:
    settings = _settings(tmp_path)
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
        yield url


def _bearer(t: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {t}"}


def test_plan_ask_and_search_take_the_session_from_the_token(service: str, token: Callable[..., str]) -> None:
    eu = _bearer(token(market="eu"))
    plan = httpx.post(f"{service}/v1/plan", json={"message": "and the Pro?", "history": ["how long is the warranty on the Vela X3?"]}, headers=eu)
    assert plan.status_code == 200, plan.text
    body = plan.json()["plan"]
    assert [(c["field"], c["value"]) for c in body["access"]["conditions"]] == [("markets", "eu")]
    assert body["queries"][0]["kind"] == "standalone"
    ask = httpx.post(f"{service}/v1/ask", json={"message": "Pico Buds battery", "k": 5}, headers=eu).json()
    assert ask["hits"] and all("eu" in h["payload"]["markets"] for h in ask["hits"])
    us = httpx.post(f"{service}/v1/search", json={"text": "Pico Buds battery", "k": 5}, headers=_bearer(token(market="us"))).json()
    assert us["hits"] and all("us" in h["payload"]["markets"] for h in us["hits"])
    narrowed = httpx.post(f"{service}/v1/search", headers=eu, json={"text": "warranty", "k": 5, "filters": {
        "conditions": [{"kind": "match", "field": "markets", "value": "us"}]}}).json()
    assert narrowed["hits"] and all({"eu", "us"} <= set(h["payload"]["markets"]) for h in narrowed["hits"])  # eu AND us: only narrows


@pytest.mark.parametrize("case", ["none", "garbage", "forged", "expired", "alg_none", "no_market"])
def test_no_valid_credentials_is_401_never_a_plan(service: str, token: Callable[..., str], case: str) -> None:
    import jwt

    headers = {
        "none": {},
        "garbage": _bearer("not.a.token"),
        "forged": _bearer(token(market="eu", secret="another-secret-another-secret-another!")),
        "expired": _bearer(token(market="eu", exp_in=-3600)),
        "alg_none": _bearer(jwt.encode({"sub": "x", "market": "eu", "exp": int(time.time()) + 60}, key=None, algorithm="none")),
        "no_market": _bearer(token()),  # valid, but without the required access key
    }[case]
    for path, body in (("/v1/plan", {"message": "warranty"}), ("/v1/ask", {"message": "warranty"}), ("/v1/search", {"text": "warranty"})):
        r = httpx.post(f"{service}{path}", json=body, headers=headers)
        assert r.status_code == 401, (case, path, r.text)
        assert r.headers["www-authenticate"] == "Bearer" and "plan" not in r.json() and "hits" not in r.json()


@pytest.mark.parametrize("field", ["session", "access", "market"])
def test_a_body_that_carries_access_is_refused(service: str, token: Callable[..., str], field: str) -> None:
    body = {"message": "warranty", field: {"market": "us"} if field != "market" else "us"}
    r = httpx.post(f"{service}/v1/ask", json=body, headers=_bearer(token(market="eu")))
    assert r.status_code == 422 and field in r.json()["detail"], r.text


def test_too_large_bodies_and_messages_are_413(service: str, token: Callable[..., str]) -> None:
    eu = _bearer(token(market="eu"))
    big = httpx.post(f"{service}/v1/plan", json={"message": "x " * 200_000}, headers=eu)
    assert big.status_code == 413 and "max_body_bytes" in big.json()["detail"]
    chunked = httpx.post(f"{service}/v1/plan", content=iter([b'{"message": "', b"y" * 300_000, b'"}']), headers={**eu, "content-type": "application/json"})
    assert chunked.status_code == 413  # no Content-Length: counted as it arrives
    for path, field in (("/v1/plan", "message"), ("/v1/ask", "message"), ("/v1/search", "text")):
        long = httpx.post(f"{service}{path}", json={field: "warranty " * 100}, headers=eu)
        assert long.status_code == 413 and "max_message_chars" in long.json()["detail"], path


def test_rate_limit_per_subject_is_429_with_retry_after(tmp_path: Path, index: Index, token: Callable[..., str]) -> None:
    settings = _settings(tmp_path, rate_limit="3/minute")
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
        alice, bob = _bearer(token(market="eu", sub="alice")), _bearer(token(market="eu", sub="bob"))
        codes = [httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=alice).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        r = httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=alice)
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        assert httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=bob).status_code == 200  # per client


def test_a_signed_gateway_session_is_accepted_and_a_tampered_one_is_not(tmp_path: Path, index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUERYWISE_GATEWAY_SECRET", "gateway-shared-secret")
    settings = _settings(tmp_path, auth="gateway")
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
        headers = sign_gateway_session({"market": "eu"}, "gateway-shared-secret", subject="carol")
        ok = httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=headers)
        assert ok.status_code == 200 and ok.json()["plan"]["access"]["conditions"][0]["value"] == "eu"
        other = sign_gateway_session({"market": "us"}, "gateway-shared-secret")
        spliced = {"x-querywise-session": other["x-querywise-session"], "x-querywise-signature": headers["x-querywise-signature"]}
        expired = sign_gateway_session({"market": "eu"}, "gateway-shared-secret", ttl_s=-3600)
        for bad in (spliced, expired, sign_gateway_session({"market": "eu"}, "wrong-secret"), {}):
            assert httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=bad).status_code == 401


def test_a_body_that_does_not_arrive_in_time_is_408_and_the_service_keeps_answering(tmp_path: Path, index: Index, token: Callable[..., str]) -> None:
    import socket

    settings = _settings(tmp_path, request_body_timeout_s=0.5)
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
        host, port = url.removeprefix("http://").split(":")
        head = (f"POST /v1/plan HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token(market='eu')}\r\n"
                "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n").encode()
        held = []
        for _ in range(20):  # each sends its head and 13 of the 200 bytes it announced, then nothing
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(head + b'{"message": "')
            held.append(sock)
        started = time.monotonic()
        assert httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        answers = [_until_closed(sock, started + 3) for sock in held]
        assert all(answer.startswith(b"HTTP/1.1 408") and answer.endswith(b'([server] request_body_timeout_s)"}') for answer in answers), answers[:1]
        # a body sent in pieces within the deadline is read
        sock = socket.create_connection((host, int(port)), timeout=5)
        body = b'{"message": "warranty"}'
        sock.sendall(head.replace(b"Content-Length: 200", f"Content-Length: {len(body)}".encode()) + body[:5])
        time.sleep(0.1)
        sock.sendall(body[5:])
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()


def _until_closed(sock: Any, deadline: float) -> bytes:
    """What the server sent before it closed the connection (b"...still open" when it did not by `deadline`)."""
    data = b""
    while True:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            sock.close()
            return data + b"...still open"
        if not chunk:
            sock.close()
            return data
        data += chunk


def test_rs256_tokens_with_the_configured_public_key(tmp_path: Path, index: Index, token: Callable[..., str]) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = tmp_path / "public.pem"
    pem.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    settings = _settings(tmp_path, jwt_algorithms=["RS256"], jwt_public_key=pem, jwt_audience="querywise")
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
        good = token(market="eu", key=key, algorithm="RS256", aud="querywise")
        assert httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=_bearer(good)).status_code == 200
        hs = _hs256_signed_with(pem.read_bytes(), {"sub": "mallory", "market": "eu", "aud": "querywise", "exp": int(time.time()) + 60})
        wrong_aud = token(market="eu", key=key, algorithm="RS256", aud="someone-else")
        for bad in (hs, wrong_aud):
            assert httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=_bearer(bad)).status_code == 401


def _hs256_signed_with(key: bytes, claims: dict[str, Any]) -> str:
    """The algorithm-confusion token: HS256 keyed with the server's public key (PyJWT refuses to make one)."""
    import base64
    import hashlib
    import hmac
    import json

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + b64(json.dumps(claims).encode())
    return head + "." + b64(hmac.new(key, head.encode(), hashlib.sha256).digest())


def test_health_readiness_and_metrics(service: str, token: Callable[..., str]) -> None:
    assert httpx.get(f"{service}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{service}/readyz")
    assert ready.status_code == 200 and ready.json()["index"] is True
    httpx.post(f"{service}/v1/plan", json={"message": "warranty"}, headers=_bearer(token(market="eu")))
    httpx.post(f"{service}/v1/plan", json={"message": "warranty"})
    text = httpx.get(f"{service}/metrics").text
    assert 'querywise_requests_total{route="/v1/plan",status="200"} 1.0' in text
    assert 'querywise_requests_total{route="/v1/plan",status="401"} 1.0' in text
    assert 'querywise_move_seconds_count{move="route"' in text and "querywise_request_seconds_bucket" in text


def test_the_secret_must_be_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUERYWISE_JWT_SECRET", raising=False)
    with pytest.raises(RuntimeError, match="QUERYWISE_JWT_SECRET"):
        Authenticator(ServerSettings(), shop_settings(Path(".")).access)
    with pytest.raises(ValueError, match="need jwt_public_key"):
        ServerSettings(jwt_algorithms=["RS256"])
    with pytest.raises(ValueError, match="rate_limit"):
        ServerSettings(rate_limit="fast please")


@pytest.mark.parametrize("authenticated", [True, False])
def test_a_request_for_another_host_is_refused_in_every_mode(tmp_path: Path, index: Index, token: Callable[..., str], authenticated: bool) -> None:
    """DNS rebinding: a page on attacker.example whose name now points at 127.0.0.1 sends its own Host."""
    settings = _settings(tmp_path)
    authenticator = Authenticator(settings.server, settings.access) if authenticated else None
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=authenticator)) as url:
        headers = _bearer(token(market="eu")) if authenticated else {}
        assert httpx.get(f"{url}/healthz").status_code == 200
        for host in ("attacker.example", "attacker.example:8000", "127.0.0.1.attacker.example", ""):
            r = httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers={**headers, "Host": host})
            assert r.status_code == 400, host
        assert httpx.get(f"{url}/healthz", headers={"Host": "attacker.example"}).status_code == 400
    with QueryWise(settings, index) as qw, pytest.raises(ValueError, match="DNS rebinding"):
        create_app(qw, authenticator=None, server=ServerSettings(allowed_hosts=["*"]))


def test_failed_authentications_are_rate_limited_per_address(tmp_path: Path, index: Index, token: Callable[..., str]) -> None:
    settings = _settings(tmp_path, auth_failure_limit="5/minute")
    with QueryWise(settings, index) as qw, running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as url:
        forged = _bearer(token(market="eu", secret="not-the-secret-but-long-enough-32-bytes!"))
        codes = [httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=forged).status_code for _ in range(7)]
        assert codes == [401] * 5 + [429] * 2
        r = httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=forged)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        # valid credentials from the same address still pass (behind a proxy, every client has its address)
        assert httpx.post(f"{url}/v1/plan", json={"message": "warranty"}, headers=_bearer(token(market="eu"))).status_code == 200


def test_filter_values_no_engine_can_hold_are_422(service: str, token: Callable[..., str]) -> None:
    eu = _bearer(token(market="eu"))
    for condition in ('{"kind": "match", "field": "price", "value": 1000000000000000000000000000000}',
                      '{"kind": "range", "field": "price", "gt": NaN}', '{"kind": "range", "field": "price", "lt": Infinity}'):
        body = '{"text": "warranty", "filters": {"conditions": [' + condition + ']}}'
        r = httpx.post(f"{service}/v1/search", content=body, headers={**eu, "content-type": "application/json"})
        assert r.status_code == 422, r.text


def test_plan_offers_a_pointer_s_readings_as_options_when_the_deployment_asks(tmp_path: Path, hash_embedder: Any, token: Callable[..., str]) -> None:
    """Two candidates for "it", and a deployment that would rather ask ([ambiguity] cost_ask under
    cost_cover): /v1/plan carries the question, each option a standalone query, and the candidates."""
    s = load_settings(demo_file("querywise.toml"))
    routing = s.routing.model_copy(update={"rules": [IdentifierRule(pattern=r"\S", route="kb_search")]})  # a hashing embedder routes at random
    s = s.model_copy(update={"cache_dir": tmp_path / "c", "routing": routing, "server": ServerSettings(rate_limit=None),
                             "understanding": s.understanding.model_copy(update={"topic_shift": False}),
                             "ambiguity": s.ambiguity.model_copy(update={"cost_ask": 3.0})})
    with build_index(demo_corpus(), tmp_path / "ix", settings=s, embedder=hash_embedder) as ix, QueryWise(s, ix) as qw, \
            running(create_app(qw, authenticator=Authenticator(s.server, s.access))) as url:
        r = httpx.post(f"{url}/v1/plan", json={"message": "does it cover water damage?", "history": ["Compare the Halden Solace 7 and the Corra Tide 4."]},
                       headers=_bearer(token(market="eu")))
    assert r.status_code == 200, r.text
    plan = r.json()["plan"]
    assert plan["action"] == {"type": "ask", "question": "Which one do you mean: Halden Solace 7 or Corra Tide 4?",
                              "options": ["does the Halden Solace 7 cover water damage?", "does the Corra Tide 4 cover water damage?"]}
    step = next(s for s in plan["trace"] if s["move"] == "ambiguity")
    assert step["details"]["candidates"] == ["Halden Solace 7", "Corra Tide 4"]


def test_a_jobs_file_sqlite_cannot_use_stops_the_start(tmp_path: Path, index: Index) -> None:
    jobs_file = tmp_path / "jobs.sqlite"
    jobs_file.write_text("a file that is not a SQLite database\n" * 100)
    settings = _settings(tmp_path, jobs_file=jobs_file)
    with QueryWise(settings, index) as qw:
        app = create_app(qw, authenticator=None, server=settings.server)  # building the app opens nothing yet
        with pytest.raises(RuntimeError, match=r"jobs_file.*not a database"), TestClient(app):  # its lifespan's start
            pass
