"""SDK exceptions -> `LLMError` reasons. Both official SDKs share the same exception family."""

from __future__ import annotations

from typing import Any

from querywise.llm.provider import LLMError


def translate(sdk: Any, exc: Exception, latency_s: float) -> LLMError:
    """The `LLMError` for an exception raised by the `anthropic` or `openai` module `sdk`."""
    if isinstance(exc, sdk.APITimeoutError):
        return LLMError("timeout", str(exc) or "timed out", latency_s=latency_s)
    if isinstance(exc, sdk.RateLimitError):
        return LLMError("rate_limited", f"HTTP 429: {exc}", latency_s=latency_s)
    if isinstance(exc, sdk.InternalServerError):
        return LLMError("server_error", f"HTTP {getattr(exc, 'status_code', '5xx')}: {exc}", latency_s=latency_s)
    if isinstance(exc, sdk.APIStatusError):
        return LLMError("api_error", f"HTTP {exc.status_code}: {exc}", latency_s=latency_s)
    if isinstance(exc, sdk.APIConnectionError):
        return LLMError("connection", str(exc), latency_s=latency_s)
    return LLMError("api_error", f"{type(exc).__name__}: {exc}", latency_s=latency_s)
