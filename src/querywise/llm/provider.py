"""The one small interface every LLM provider implements: a structured call.

A call sends instructions, messages and a JSON schema, and returns the parsed object with its
token usage, latency and stop reason (`StructuredResult`), or raises `LLMError` with a reason
the budget counts (`timeout`, `rate_limited`, `refusal`, ...). Nothing else crosses this line:
the moves never see an SDK type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

__all__ = [
    "FailureReason",
    "LLMError",
    "Message",
    "Provider",
    "StructuredRequest",
    "StructuredResult",
    "Usage",
    "normalise",
]

FailureReason = Literal[
    "timeout",  # the call took longer than the route's timeout
    "rate_limited",  # HTTP 429 after the SDK's retries
    "server_error",  # HTTP 5xx after the SDK's retries
    "connection",  # no connection, or another transport error
    "api_error",  # any other error status (400, 401, 404...)
    "refusal",  # the model declined
    "max_tokens",  # the output was cut off: no plan
    "stop",  # any other abnormal stop reason
    "malformed_json",  # the text is not JSON
    "schema_violation",  # JSON, but not the schema's shape (extra fields, wrong enum, types)
    "guard_rejected",  # the rewrite lost or invented a name, identifier or number
    "not_scripted",  # the scripted provider holds no response for this input
    "unavailable",  # the provider could not be set up (missing key, missing extra)
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
    timeout_s: float = 2.0
    max_tokens: int = 400
    extra: dict[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    """A structured-call backend. Implementations: Anthropic, OpenAI-compatible, scripted,
    llama.cpp (optional extra)."""

    name: str
    model: str

    def complete(self, request: StructuredRequest) -> StructuredResult:
        """Run one call; raise `LLMError` for anything but a parsed object after a normal stop."""
        ...

    def close(self) -> None: ...


_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Case-folded, whitespace-collapsed text: the key of caches and scripted responses.

    >>> normalise("  Does IT\\ncover water damage? ")
    'does it cover water damage?'
    """
    return _SPACE.sub(" ", text).strip().casefold()


def parse_json_object(text: str, *, usage: Usage, latency_s: float) -> dict[str, Any]:
    """The JSON object in `text`, or `LLMError("malformed_json")`."""
    import json

    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise LLMError("malformed_json", f"not JSON ({exc}): {str(text)[:80]!r}", usage=usage, latency_s=latency_s) from None
    if not isinstance(value, dict):
        raise LLMError("malformed_json", f"expected a JSON object, got {type(value).__name__}", usage=usage, latency_s=latency_s)
    return value
