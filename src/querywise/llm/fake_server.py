"""A fake LLM provider: a stdlib HTTP server on 127.0.0.1 that speaks the Anthropic Messages API
(`POST /v1/messages`) and the OpenAI chat-completions API (`POST /v1/chat/completions`).

It plays recorded responses and injects faults, so tests and benchmarks drive the REAL SDK
clients (`anthropic.Anthropic(base_url=server.url)`, `openai.OpenAI(base_url=server.url + "/v1")`)
through their real retry, timeout and parsing code. A reply can wait like a real model: time to
first token plus output tokens at a decoding rate.

Faults (`Reply(fault=...)`; "the answer's list" is OpenAI's `choices`, Anthropic's `content`):

| fault | what the server does |
|---|---|
| `timeout` | hangs `hang_s` before replying (a hung provider) |
| `429`, `500` | that status, `retry-after-ms: 1`, `x-should-retry: true` |
| `retry_after_30`, `retry_after_3600` | 429 with `Retry-After: 30` / `3600` |
| `disconnect` | closes the connection without a reply |
| `trickle` | a correct reply, one byte every `trickle_s` |
| `malformed_json`, `refusal`, `max_tokens` | the model's text cut, a refusal, a max-tokens stop |
| `html` | 200 with an HTML page (`text/html`) |
| `json_list`, `empty_object` | 200 with `[...]` / `{}` |
| `choices_null` | the answer's list is `null` |
| `no_message` | OpenAI: a choice without `message`; Anthropic: a text block without `text` |
| `content_null` | OpenAI: `message.content` null; Anthropic: a text block's `text` null |
| `no_usage` | a correct reply without `usage` (an answer, not a fault, for the client) |
| `deep_nesting` | a correct reply with a 2,000-deep array in an extra field |
| `deep_output` | the model's text is a 2,000-deep array |
| `oversized` | a 30 MB reply, chunked (no `Content-Length`) |
| `oversized_declared` | a 30 MB reply with its `Content-Length` |

    >>> with FakeLLMServer() as server:                       # doctest: +SKIP
    ...     server.respond_with(Reply(output={"standalone": None}))
    ...     OpenAIProvider(model="m", base_url=server.url + "/v1").complete(request)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, get_args

__all__ = ["FAULTS", "FakeLLMServer", "Fault", "Reply"]

Fault = Literal[
    "timeout", "429", "500", "malformed_json", "refusal", "max_tokens",
    "retry_after_30", "retry_after_3600", "disconnect", "trickle",
    "html", "json_list", "empty_object", "choices_null", "no_message", "content_null", "no_usage",
    "deep_nesting", "deep_output", "oversized", "oversized_declared",
]  # fmt: skip
FAULTS: tuple[Fault, ...] = get_args(Fault)
_DEEP = 2_000  # twice the interpreter's recursion limit; small, so it arrives well within a 0.5 s deadline on a loaded machine
_OVERSIZED = 30 * 1024 * 1024


@dataclass(frozen=True)
class Reply:
    """One response: a JSON object to return, or a fault. Content faults (extra fields, wrong
    enum, invented product, smuggled access filter) are just outputs with that content."""

    output: dict[str, Any] | None = None
    fault: Fault | None = None
    input_tokens: int = 600
    output_tokens: int = 80


@dataclass
class _State:
    queue: deque[Reply] = field(default_factory=deque)
    default: Reply | Callable[[str, dict[str, Any]], Reply] = field(default_factory=lambda: Reply(output={}))
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    ttft_s: float = 0.0
    tokens_per_s: float | None = None
    hang_s: float = 5.0
    trickle_s: float = 0.05
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)):  # a client that timed out and left
            return
        super().handle_error(request, client_address)


class FakeLLMServer:
    """Start with `with FakeLLMServer() as server:` (or `start()`/`stop()`); `server.url` is the base."""

    def __init__(self, *, ttft_s: float = 0.0, tokens_per_s: float | None = None, hang_s: float = 5.0, trickle_s: float = 0.05) -> None:
        self.state = _State(ttft_s=ttft_s, tokens_per_s=tokens_per_s, hang_s=hang_s, trickle_s=trickle_s)
        self._httpd = _Server(("127.0.0.1", 0), _handler(self.state))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[tuple[str, dict[str, Any]]]:
        """(api, body) of every request received: api is "anthropic" or "openai"."""
        return self.state.requests

    def play(self, *replies: Reply) -> None:
        """Queue replies for the next requests (then the default applies)."""
        with self.state.lock:
            self.state.queue.extend(replies)

    def respond_with(self, reply: Reply | Callable[[str, dict[str, Any]], Reply]) -> None:
        """The reply to every request once the queue is empty (a callable gets (api, body))."""
        with self.state.lock:
            self.state.queue.clear()
            self.state.default = reply

    def start(self) -> FakeLLMServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_precisely(seconds: float) -> None:
    """Sleep, then spin the last few ms: a thread waking from a long sleep on an idle virtual
    machine can be 10-30 ms late, which would be the fake's timing error, not the client's."""
    deadline = time.perf_counter() + seconds
    if seconds > 0.02:
        time.sleep(seconds - 0.02)
    while time.perf_counter() < deadline:
        time.sleep(0)


def _anthropic_body(body: dict[str, Any], reply: Reply, text: str, stop: str) -> dict[str, Any]:
    tool = body.get("tool_choice", {}).get("name") if isinstance(body.get("tool_choice"), dict) else None
    if tool and stop == "end_turn" and reply.output is not None:
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_fake", "name": tool, "input": reply.output}]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": text}]
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake"), "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


def _openai_body(body: dict[str, Any], reply: Reply, text: str | None, finish: str, refusal: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": refusal}, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens, "total_tokens": reply.input_tokens + reply.output_tokens},
    }


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Private to BaseHTTPRequestHandler (filled by send_header); typeshed does not declare it.
        _headers_buffer: list[bytes]

        def setup(self) -> None:
            super().setup()
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            self._send_bytes(status, json.dumps(payload).encode(), headers)

        def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None, *, content_type: str = "application/json",
                        declare: bool = True) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                if declare:
                    self.send_header("Content-Length", str(len(data)))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                # Headers and body in one write: two small writes meet Nagle's algorithm and the
                # client's delayed ACK, which adds ~40 ms to every reply on loopback.
                self._headers_buffer.append(b"\r\n")
                head = b"".join(self._headers_buffer)
                self._headers_buffer = []
                if declare:
                    self.wfile.write(head + data)
                    return
                self.wfile.write(head)
                step = 1 << 16
                for i in range(0, len(data), step):
                    piece = data[i : i + step]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout, size limit)
                self.close_connection = True

        def _send_oversized(self, *, declare: bool) -> None:
            """A 200 of `_OVERSIZED` bytes, headers first and the body made piece by piece: building
            30 MB before the first byte leaves took longer than a 0.5 s deadline on a loaded machine."""
            head, tail, piece = b'{"padding": "', b'"}', b"x" * (1 << 16)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if declare:
                    self.send_header("Content-Length", str(len(head) + _OVERSIZED + len(tail)))
                else:
                    self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                frame = (lambda b: b) if declare else (lambda b: b"%x\r\n%s\r\n" % (len(b), b))
                self.wfile.write(frame(head))
                for _ in range(_OVERSIZED // len(piece)):
                    self.wfile.write(frame(piece))
                self.wfile.write(frame(tail) + (b"" if declare else b"0\r\n\r\n"))
            except (BrokenPipeError, ConnectionResetError):  # the client stops at its size limit
                self.close_connection = True

        def _trickle(self, data: bytes) -> None:
            """A 200 whose body arrives one byte every `trickle_s` (each byte resets a read timeout)."""
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.flush()
                for i in range(len(data)):
                    self.wfile.write(data[i : i + 1])
                    self.wfile.flush()
                    time.sleep(state.trickle_s)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            api = "anthropic" if self.path.endswith("/messages") else "openai" if self.path.endswith("/chat/completions") else ""
            if not api:
                self._send(404, {"error": {"type": "not_found", "message": self.path}})
                return
            with state.lock:
                state.requests.append((api, body))
                default = state.default
                reply = state.queue.popleft() if state.queue else (default(api, body) if callable(default) else default)
            self._reply(api, body, reply)

        def _reply(self, api: str, body: dict[str, Any], reply: Reply) -> None:
            fault = reply.fault
            if fault == "timeout":
                time.sleep(state.hang_s)
            if fault == "disconnect":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if fault in ("429", "500", "retry_after_30", "retry_after_3600"):
                status = 500 if fault == "500" else 429
                kind = "rate_limit_error" if status == 429 else "api_error"
                err = {"type": "error", "error": {"type": kind, "message": f"fake {status}"}}
                after = {"retry_after_30": {"retry-after": "30"}, "retry_after_3600": {"retry-after": "3600"}}.get(fault or "")
                self._send(status, err, after or {"retry-after-ms": "1", "x-should-retry": "true"})
                return
            if fault == "html":
                page = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>"
                self._send_bytes(200, page, content_type="text/html")
                return
            if fault in ("json_list", "empty_object"):
                self._send(200, [{"text": "{}"}] if fault == "json_list" else {})
                return
            if fault in ("oversized", "oversized_declared"):
                self._send_oversized(declare=fault == "oversized_declared")
                return
            wait = state.ttft_s + (reply.output_tokens / state.tokens_per_s if state.tokens_per_s else 0.0)
            if wait > 0:
                _wait_precisely(wait)
            text = json.dumps(reply.output if reply.output is not None else {})
            if fault == "malformed_json":
                text = text[: max(1, len(text) // 2)] + " <- cut"
            elif fault == "deep_output":
                text = "[" * _DEEP + "]" * _DEEP
            if api == "anthropic":
                stop = {"refusal": "refusal", "max_tokens": "max_tokens"}.get(fault or "", "end_turn")
                if fault == "refusal":
                    text = "I can't help with that."
                elif fault == "max_tokens":
                    text = text[: max(1, len(text) // 2)]
                payload = _anthropic_body(body, reply, text, stop)
                if fault in ("choices_null", "no_message", "content_null"):
                    payload["content"] = None if fault == "choices_null" else [{"type": "text"} if fault == "no_message" else {"type": "text", "text": None}]
            else:
                finish = "length" if fault == "max_tokens" else "stop"
                refusal = "I can't help with that." if fault == "refusal" else None
                content = None if refusal else (text[: max(1, len(text) // 2)] if fault == "max_tokens" else text)
                payload = _openai_body(body, reply, content, finish, refusal)
                if fault == "choices_null":
                    payload["choices"] = None
                elif fault == "no_message":
                    del payload["choices"][0]["message"]
                elif fault == "content_null":
                    payload["choices"][0]["message"]["content"] = None
            if fault == "no_usage":
                del payload["usage"]
            data = json.dumps(payload).encode()
            if fault == "deep_nesting":
                data = data[:-1] + b', "debug": ' + b"[" * _DEEP + b"]" * _DEEP + b"}"
            if fault == "trickle":
                self._trickle(data)
            else:
                self._send_bytes(200, data)

    return Handler
