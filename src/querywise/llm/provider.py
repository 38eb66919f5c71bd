"""The one small interface every LLM provider implements: a structured call.

A call sends instructions, messages and a JSON schema, and returns the parsed object with its
token usage, latency and stop reason (`StructuredResult`), or raises `LLMError` with a reason
the budget counts (`timeout`, `rate_limited`, `refusal`, ...). Nothing else crosses this line:
the moves never see an SDK type.

JSON from outside (a reply's envelope, the model's text) is read with `load_json`, whose nesting
depth is checked before the parser runs: the parser never recurses deeper than `MAX_JSON_DEPTH`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

__all__ = [
    "MAX_JSON_DEPTH",
    "FailureReason",
    "LLMError",
    "Message",
    "Provider",
    "StructuredRequest",
    "StructuredResult",
    "UnavailableProvider",
    "Usage",
    "json_depth",
    "load_json",
    "normalise",
    "usage_of",
]

FailureReason = Literal[
    "timeout",  # no answer within the request's deadline (the route's timeout)
    "rate_limited",  # HTTP 429, after the retries that fit in the deadline
    "server_error",  # HTTP 5xx, after the retries that fit in the deadline
    "connection",  # no connection, or another transport error
    "api_error",  # any other error status (400, 401, 404...)
    "refusal",  # the model declined
    "max_tokens",  # the output was cut off: no plan
    "stop",  # any other abnormal stop reason
    "malformed_response",  # the reply is not the API's shape: not JSON, a list, missing or null fields, nested too deep
    "too_large",  # the reply is larger than [llm] max_response_bytes
    "malformed_json",  # the model's text is not a JSON object (or is nested too deep)
    "schema_violation",  # JSON, but not the schema's shape (extra fields, wrong enum, types)
    "guard_rejected",  # the rewrite lost or invented a name, identifier or number
    "not_scripted",  # the scripted provider holds no response for this input
    "unavailable",  # the provider could not be set up (missing key, missing extra), or is stuck
    "provider_error",  # an unexpected exception in a provider or a check (a bug), caught by the tier
]


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)
    input_tokens: int = 0
    output_tokens: int = 0


class StructuredResult(BaseModel):
    """A successful structured call: the parsed JSON object and what it cost."""

    model_config = ConfigDict(frozen=True)
    parsed: dict[str, Any]
    usage: Usage = Usage()
    latency_s: float = 0.0
    stop_reason: str = "end_turn"
    model: str = ""


class LLMError(RuntimeError):
    """A call that produced no usable object; `reason` is what the budget counts it under."""

    def __init__(self, reason: FailureReason, detail: str, *, usage: Usage | None = None, latency_s: float = 0.0) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: FailureReason = reason
        self.detail = detail
        self.usage = usage or Usage()
        self.latency_s = latency_s


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class StructuredRequest:
    """One structured call. `name` identifies the task (and its schema); `key` is the task's
    input in one string, which the scripted provider looks responses up by."""

    name: str
    instructions: str
    messages: tuple[Message, ...]
    schema: dict[str, Any]
    key: str
    timeout_s: float = 2.0  # the call's deadline: every attempt, retry wait and byte of the reply within it
    max_tokens: int = 400
    extra: dict[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    """A structured-call backend. Implementations: Anthropic, OpenAI-compatible, scripted,
    llama.cpp (optional extra)."""

    name: str
    model: str

    def complete(self, request: StructuredRequest) -> StructuredResult:
        """Run one call within `request.timeout_s` (its deadline, retries included); raise
        `LLMError` for anything but a parsed object after a normal stop."""
        ...

    def close(self) -> None: ...


class UnavailableProvider:
    """The provider of an `[llm]` section that could not be set up (no API key in the
    environment, the llama.cpp extra missing): every call raises `LLMError("unavailable")`, so
    the tier falls back by route policy and counts it, instead of the deployment failing to start.

    >>> p = UnavailableProvider("anthropic", "claude-haiku-4-5", "environment variable ANTHROPIC_API_KEY is not set")
    >>> p.complete(StructuredRequest("plan", "", (), {}, key="hi"))
    Traceback (most recent call last):
    ...
    querywise.llm.provider.LLMError: unavailable: environment variable ANTHROPIC_API_KEY is not set
    """

    def __init__(self, name: str, model: str, detail: str) -> None:
        self.name, self.model, self.detail = name, model, detail

    def complete(self, request: StructuredRequest) -> StructuredResult:
        raise LLMError("unavailable", self.detail)

    def close(self) -> None:
        return None


_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Case-folded, whitespace-collapsed text: the key of caches and scripted responses.

    >>> normalise("  Does IT\\ncover water damage? ")
    'does it cover water damage?'
    """
    return _SPACE.sub(" ", text).strip().casefold()


MAX_JSON_DEPTH = 64  # the answers are a few levels deep; the API envelopes around them a few more
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN = frozenset(b"[{")


def json_depth(data: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deeply the arrays and objects of JSON text `data` nest (brackets inside strings do not
    count), without recursion; counting stops once it passes `limit`.

    >>> json_depth(b'{"a": [1, {"b": "[[["}]}')
    3
    """
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for b in brackets:
        if b in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def load_json(data: bytes | str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """JSON text parsed, its depth checked first; `ValueError` (with a reason) when it is not
    JSON, not UTF-8, or nested deeper than `max_depth`.

    >>> load_json(b'{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> load_json("[" * 100_000)
    Traceback (most recent call last):
    ...
    ValueError: nested deeper than 64 levels
    """
    import json

    if not isinstance(data, (str, bytes)):
        raise ValueError(f"not JSON text but {type(data).__name__}")
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if json_depth(raw, max_depth) > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(data)
    except RecursionError:  # not reachable after the depth check; kept as the last line of defence
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON ({exc})") from None


def parse_json_object(text: str, *, usage: Usage, latency_s: float) -> dict[str, Any]:
    """The JSON object in the model's `text`, or `LLMError("malformed_json")`."""
    try:
        value = load_json(text)
    except ValueError as exc:
        raise LLMError("malformed_json", f"{exc}: {str(text)[:80]!r}", usage=usage, latency_s=latency_s) from None
    if not isinstance(value, dict):
        raise LLMError("malformed_json", f"expected a JSON object, got {type(value).__name__}", usage=usage, latency_s=latency_s)
    return value


def usage_of(raw: Any, input_key: str, output_key: str) -> Usage:
    """Token counts from a reply's `usage`; missing or malformed counts are 0 (usage is metadata:
    a reply without it, as some OpenAI-compatible servers send, is still an answer)."""
    if not isinstance(raw, dict):
        return Usage()

    def count(key: str) -> int:
        v = raw.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    return Usage(input_tokens=count(input_key), output_tokens=count(output_key))
