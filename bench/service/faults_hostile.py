"""Issue #37's fault families, run by `bench.service.faults` after the LLM and rebuild phases.

Each family is tried a bounded number of times against a real uvicorn on 127.0.0.1 and counts
what it tried and how often the service failed (a 5xx, an answer past its bound, a connection
kept, a wrong decision):

- retriever trickle: an HTTP retriever answering one byte every 0.2 s (40 s in all), `[retriever]
  timeout_s = 1`: every /v1/search (one retriever call) must be 502 within the deadline + 2 s;
- retriever deep JSON: the retriever answers 100,000 nested lists: 502, never 500;
- regex at load: catastrophic rules refused at load within 5 s, safe ones accepted;
- half-sent heads: connections that send half a request line must be closed within
  `[server] request_head_timeout_s` (+3 s), while /healthz answers;
- slow bodies: requests that send their head and a part of their body must get 408 and be closed
  within `[server] request_body_timeout_s` (+3 s);
- failed-auth storm: forged tokens from one address get 401 up to `[server] auth_failure_limit`,
  then 429, never 200 or 5xx; valid credentials from the same address still pass;
- JWT key confusion: tokens an RS256 + ES256 deployment holding an RSA key (PEM or OpenSSH) must
  refuse: 401 each, never 500;
- job polls across two workers: a real `querywise serve --workers 2`; a job's 40 polls, no 404.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench import log, percentiles

RETRIEVER_TIMEOUT_S = 1.0
TRICKLE_S = 0.2
SLACK_S = 2.0  # beyond the retriever's deadline: the request's own work and queueing, 4 at once on a loaded 2-core host
CATASTROPHIC = [r"^(\w+\s?)+$", r"(a|aa)+$", r"(x+x+)+y", r"^(a+)+$", r"(\d+\.?)+$", r"^([a-z0-9]+-?)+$"]
SAFE = [r"\b[A-Z]{2,}-\d{3,}\b", r"\b[A-Z]+(?:-[A-Z0-9]+)*\b", r"\border\s+#?\d+", r"^(hi|hello)\b", r"\b(\w+)@(\w+)\.com\b"]


def _family(name: str, what: str, tried: int, failed: int, **detail: Any) -> dict[str, Any]:
    return {"family": name, "what": what, "tried": tried, "failed": failed, **detail}


@contextlib.contextmanager
def _bad_retriever(kind: str) -> Iterator[str]:
    """An HTTP retriever on 127.0.0.1 that trickles its answer or answers 100k-deep JSON."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            if kind == "deep":
                self.wfile.write(b"[" * 100_000 + b"]" * 100_000)
                return
            for byte in b'{"hits": []}' + b" " * 200:  # ~40 s in all, never a pause a per-read timeout would catch
                if stop.is_set():
                    return
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:  # the service gave up on it: what the family wants
                    return
                time.sleep(TRICKLE_S)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/search"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def _retriever_families(settings: Any, embedder: Any, token: str, n: int) -> list[dict[str, Any]]:
    import httpx

    from querywise.config import RetrieverSettings, ServerSettings
    from querywise.server import Authenticator, create_app, running
    from querywise.service import QueryWise

    out = []
    for kind, name in (("trickle", "retriever trickle"), ("deep", "retriever deep JSON")):
        with _bad_retriever(kind) as url:
            s = settings.model_copy(update={"retriever": RetrieverSettings(kind="http", url=url, timeout_s=RETRIEVER_TIMEOUT_S),
                                            "server": ServerSettings(rate_limit=None, auth_failure_limit=None)})
            with QueryWise(s, None, embedder=embedder) as qw, running(create_app(qw, authenticator=Authenticator(s.server, s.access))) as base:

                def one(i: int, base: str = base) -> tuple[int, float]:  # /v1/search: one retriever call, so one deadline
                    started = time.perf_counter()
                    r = httpx.post(f"{base}/v1/search", json={"text": f"warranty of the Solace {i}", "k": 5}, headers={"Authorization": f"Bearer {token}"},
                                   timeout=60)
                    return r.status_code, time.perf_counter() - started

                with ThreadPoolExecutor(4) as pool:
                    done = list(pool.map(one, range(n)))
        bound = RETRIEVER_TIMEOUT_S + SLACK_S
        failed = sum(status != 502 or took > bound for status, took in done)
        answers = f"one byte every {TRICKLE_S:g} s" if kind == "trickle" else "100,000 nested lists"
        out.append(_family(name, f"HTTP retriever {answers}, "
                           f"timeout_s {RETRIEVER_TIMEOUT_S:g}: /v1/search 502 within {bound:g} s (4 at once)", n, failed,
                           statuses=dict(Counter(str(s) for s, _ in done)), latency=percentiles([t for _, t in done])))
    return out


def _regex_family() -> dict[str, Any]:
    from pydantic import ValidationError

    from querywise.config import Settings

    wrong, times = [], []
    for pattern in [*CATASTROPHIC, *SAFE]:
        started = time.perf_counter()
        try:
            Settings.model_validate({"routing": {"routes": [{"name": "kb_search", "search": True}], "rules": [{"pattern": pattern, "route": "kb_search"}]}})
            refused = False
        except ValidationError:
            refused = True
        took = time.perf_counter() - started
        times.append(took)
        if refused != (pattern in CATASTROPHIC) or took > 5:
            wrong.append({"pattern": pattern, "refused": refused, "s": round(took, 2)})
    return _family("regex at load", f"{len(CATASTROPHIC)} catastrophic rules refused, {len(SAFE)} safe ones accepted, each within 5 s",
                   len(CATASTROPHIC) + len(SAFE), len(wrong), wrong=wrong, max_s=round(max(times), 2))


def _half_sent_heads(url: str, head_s: float, n: int) -> dict[str, Any]:
    import httpx

    host, port = url.removeprefix("http://").split(":")
    held, healthz = [], []
    opened = time.monotonic()
    for i in range(n):
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall((b"GET /healthz HT", b"POST /v1/plan HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")[i % 2])
        held.append(sock)
    while time.monotonic() < opened + head_s + 1:  # the service answers while they are held
        started = time.perf_counter()
        healthz.append((httpx.get(f"{url}/healthz", timeout=10).status_code, time.perf_counter() - started))
        time.sleep(0.5)
    still_open = 0
    for sock in held:
        sock.settimeout(max(0.05, opened + head_s + 3 - time.monotonic()))
        try:
            still_open += sock.recv(1024) != b""
        except TimeoutError:
            still_open += 1
        except ConnectionResetError:
            pass
        sock.close()
    return _family("half-sent heads", f"{n} connections sending half a request line or header, request_head_timeout_s {head_s:g}: "
                   f"closed within {head_s + 3:g} s, /healthz answering", n, still_open + sum(s != 200 for s, _ in healthz),
                   still_open=still_open, healthz=dict(Counter(str(s) for s, _ in healthz)), healthz_latency=percentiles([t for _, t in healthz]))


def _slow_bodies(url: str, token: str, body_s: float, n: int) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    head = (f"POST /v1/plan HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            "Content-Length: 2000\r\n\r\n").encode()
    held = []
    opened = time.monotonic()
    for _ in range(n):  # the head, then 13 of the 2,000 bytes it announces, then nothing
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall(head + b'{"message": "')
        held.append(sock)
    answered: Counter[str] = Counter()
    for sock in held:
        data = b""
        sock.settimeout(max(0.05, opened + body_s + 3 - time.monotonic()))
        try:
            while chunk := sock.recv(4096):
                data += chunk
            answered[data[:12].decode(errors="replace") + " then closed"] += 1
        except TimeoutError:
            answered["still open"] += 1
        except ConnectionResetError:
            answered["reset"] += 1
        sock.close()
    return _family("slow bodies", f"{n} requests sending their head and 13 of 2,000 announced body bytes, request_body_timeout_s {body_s:g}: "
                   f"408 and closed within {body_s + 3:g} s", n, n - answered["HTTP/1.1 408 then closed"], answers=dict(answered))


def _auth_storm(url: str, valid: str, limit: str, n: int) -> dict[str, Any]:
    import httpx
    import jwt

    per_minute = int(limit.split("/")[0])
    statuses: Counter[str] = Counter()
    started = time.perf_counter()
    with httpx.Client(timeout=30) as client:
        for i in range(n):
            forged = jwt.encode({"sub": f"mallory-{i}", "market": "eu", "exp": int(time.time()) + 60}, f"wrong-secret-{i}-padded-to-32-bytes!!", algorithm="HS256")
            statuses[str(client.post(f"{url}/v1/plan", json={"message": "warranty"}, headers={"Authorization": f"Bearer {forged}"}).status_code)] += 1
        took = time.perf_counter() - started
        after = client.post(f"{url}/v1/plan", json={"message": "warranty"}, headers={"Authorization": f"Bearer {valid}"}).status_code
    failed = statuses["200"] + sum(v for k, v in statuses.items() if k.startswith("5")) + max(0, statuses["401"] - per_minute) + (after != 200)
    return _family("failed-auth storm", f"{n} forged tokens from one address, auth_failure_limit {limit}: 401 up to the limit then 429; "
                   "then a valid token from the same address: 200", n + 1, failed, statuses=dict(statuses), valid_after=after, seconds=round(took, 2))


def _hmac(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def _jwt_confusion(settings: Any, embedder: Any, folder: Path) -> dict[str, Any]:
    import httpx
    import jwt
    from cryptography.hazmat.primitives import serialization as ser
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    from querywise.config import ServerSettings
    from querywise.server import Authenticator, create_app, running
    from querywise.service import QueryWise

    rsa_key, ec_key = rsa.generate_private_key(public_exponent=65537, key_size=2048), ec.generate_private_key(ec.SECP256R1())
    claims = {"sub": "mallory", "market": "eu", "exp": int(time.time()) + 600}
    good = json.dumps(claims).encode()
    rs256 = jwt.get_algorithm_by_name("RS256")

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    def raw(header: dict[str, Any], payload: bytes, sign: Callable[[bytes], bytes]) -> str:
        head = b64(json.dumps(header).encode()) + "." + b64(payload)
        return head + "." + b64(sign(head.encode()))

    wrong: list[dict[str, Any]] = []
    tried = 0
    for form, encoding, fmt in (("pem", ser.Encoding.PEM, ser.PublicFormat.SubjectPublicKeyInfo), ("openssh", ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)):
        public = rsa_key.public_key().public_bytes(encoding, fmt)
        (folder / f"public.{form}").write_bytes(public)
        tokens = {
            "ES256 by another key": jwt.encode(claims, ec_key, algorithm="ES256"),
            "ES256 with a kid naming the RSA key": jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "server-rsa"}),
            "HS256 keyed with the public key": raw({"alg": "HS256"}, good, functools.partial(_hmac, public)),
            "ES256 header, RSA signature": raw({"alg": "ES256"}, good, lambda m: rs256.sign(m, rsa_key)),
            "RS256 header, 1-byte signature": raw({"alg": "RS256"}, good, lambda m: b"x"),
            "ES256 header, 132-byte signature": raw({"alg": "ES256"}, good, lambda m: b"\xff" * 132),
            "exp Infinity, signed by the key": raw({"alg": "RS256"}, b'{"market": "eu", "exp": Infinity}', lambda m: rs256.sign(m, rsa_key)),
            "alg a list": raw({"alg": ["RS256"]}, good, lambda m: rs256.sign(m, rsa_key)),
        }
        s = settings.model_copy(update={"server": ServerSettings(rate_limit=None, auth_failure_limit=None, jwt_algorithms=["RS256", "ES256"],
                                                                 jwt_public_key=folder / f"public.{form}")})
        with QueryWise(s, None, embedder=embedder) as qw, running(create_app(qw, authenticator=Authenticator(s.server, s.access))) as base:
            for case, token in tokens.items():
                tried += 1
                status = httpx.post(f"{base}/v1/plan", json={"message": "warranty"}, headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code
                if status != 401:
                    wrong.append({"key": form, "token": case, "status": status})
    return _family("JWT key confusion", "RS256 + ES256 deployment holding an RSA key (PEM, OpenSSH): tokens of the other type, confused "
                   "algorithms, bad signatures and claims: 401 each", tried, len(wrong), wrong=wrong)


def _two_workers(folder: Path, secret: str, polls: int) -> dict[str, Any]:
    import httpx
    import jwt

    import querywise
    from querywise.demo import demo_file

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("querywise-jobs.sqlite*"):
        old.unlink()
    src = str(Path(querywise.__file__).resolve().parents[1])  # this checkout's querywise in the workers too
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "QUERYWISE_JWT_SECRET": secret, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "querywise", "serve", "-c", str(demo_file("querywise.toml")), "--port", str(port), "--workers", "2"],
                            env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    statuses: Counter[str] = Counter()
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "querywise serve --workers 2 did not start"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    break
            time.sleep(0.5)
        ops = {"Authorization": "Bearer " + jwt.encode({"sub": "ops", "market": "eu", "scope": "querywise:jobs", "exp": int(time.time()) + 600}, secret, algorithm="HS256")}
        cases = [{"id": "c1", "message": "How long is the warranty on the Halden Solace 7?", "relevant": ["x"], "session": {"market": "eu"}}]
        started = httpx.post(f"{url}/v1/eval", json={"cases": cases, "metrics": ["recall@5"]}, headers=ops, timeout=60)
        for _ in range(polls):  # a new connection each: the workers share them
            statuses[str(httpx.get(f"{url}{started.headers['location']}", headers=ops, timeout=60).status_code)] += 1
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    return _family("job polls across 2 workers", f"querywise serve --workers 2: an eval job started, then {polls} polls on new connections: "
                   "200 each, never 404", polls, polls - statuses["200"], statuses=dict(statuses))


def run_families(*, settings: Any, embedder: Any, service_url: str, token: str, secret: str, folder: Path, quick: bool,
                 body_timeout_s: float) -> list[dict[str, Any]]:
    """Every family, in order, the failed-auth storm last against `service_url` (its window holds a
    minute), whose `[server] request_body_timeout_s` is `body_timeout_s`."""
    from querywise.config import ServerSettings

    defaults = ServerSettings()
    families = []
    log("service_faults: #37 families: retriever trickle and deep JSON")
    families += _retriever_families(settings, embedder, token, 8 if quick else 16)
    log("service_faults: regex at load")
    families.append(_regex_family())
    log("service_faults: JWT key confusion")
    folder.mkdir(parents=True, exist_ok=True)
    families.append(_jwt_confusion(settings, embedder, folder))
    log(f"service_faults: half-sent heads ({defaults.request_head_timeout_s:g} s bound)")
    families.append(_half_sent_heads(service_url, defaults.request_head_timeout_s, 100 if quick else 600))
    log(f"service_faults: slow bodies ({body_timeout_s:g} s bound)")
    families.append(_slow_bodies(service_url, token, body_timeout_s, 50 if quick else 200))
    log("service_faults: failed-auth storm")
    assert defaults.auth_failure_limit is not None
    families.append(_auth_storm(service_url, token, defaults.auth_failure_limit, 100 if quick else 400))
    log("service_faults: job polls across two workers (querywise serve --workers 2)")
    families.append(_two_workers(folder / "two-workers", secret, 40))
    for f in families:
        log(f"  {f['family']}: tried {f['tried']}, failed {f['failed']}")
    return families


def markdown(families: list[dict[str, Any]]) -> list[str]:
    lines = ["## Issue #37's families", "", "| family | what is tried, and what passing means | tried | failed | seen |", "|---|---|---|---|---|"]
    for f in families:
        seen = {k: v for k, v in f.items() if k not in ("family", "what", "tried", "failed")}
        lines.append(f"| {f['family']} | {f['what']} | {f['tried']} | {f['failed']} | {json.dumps(seen, default=str)[:300]} |")
    return [*lines, ""]
