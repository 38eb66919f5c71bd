"""What the two HTTP providers (Anthropic, OpenAI-compatible) share: one call within one deadline.

`request.timeout_s` is a deadline for the whole call, not a per-attempt timeout. What the
installed SDKs do on their own does not keep to one (checked in their `_base_client.py`):

- their retry loop sleeps for whatever `Retry-After` says (`anthropic`: up to ~50 days;
  `openai`: up to 120 s), and a timeout covers each attempt, not the attempts and sleeps together;
- the httpx timeouts are per phase and per socket read: a body trickled a byte at a time never
  trips the read timeout;
- a reply is read whole into memory and parsed with `json.loads` before any check (a 30 MB body,
  a 100,000-deep array: `RecursionError`), and a 200 that is not JSON is returned as a `str`.

So the SDK is asked for ONE attempt (`max_retries=0`, every httpx phase timed out at what is left
of the deadline), the retries happen here and only when their wait (`Retry-After`, else the SDK's
own backoff) fits in what is left, and the body is streamed: `Content-Length` checked first, then
size and deadline after every chunk, then `load_json` (depth-checked). The tier still bounds the
call from outside (`querywise.understand.tier`), whatever a provider does.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from querywise.llm._errors import translate
from querywise.llm.provider import LLMError, load_json

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "post_json"]

DEFAULT_MAX_RESPONSE_BYTES = 65_536  # [llm] max_response_bytes
_MIN_ATTEMPT_S = 0.05  # a retry is worth making only with at least this much of the deadline left after its wait
_INITIAL_RETRY_DELAY, _MAX_RETRY_DELAY = 0.5, 8.0  # the SDKs' backoff


def post_json(
    sdk: Any,
    open_response: Callable[[Any], AbstractContextManager[Any]],
    *,
    timeout_s: float,
    max_retries: int,
    max_bytes: int,
) -> tuple[Any, float]:
    """The parsed JSON body of a successful reply, and the seconds the call took.

    `open_response(timeout)` opens one attempt through the SDK's `with_streaming_response`
    (headers read, body not yet); `sdk` is the `anthropic` or `openai` module. Raises `LLMError`.
    """
    import httpx2

    started = time.perf_counter()
    deadline = started + timeout_s
    attempt = 0
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise LLMError("timeout", f"no reply within the call's {timeout_s:.3g} s deadline", latency_s=time.perf_counter() - started)
        try:
            with open_response(httpx2.Timeout(left)) as response:
                body = _read_body(httpx2, response, deadline, max_bytes, started)
            break
        except sdk.APIError as exc:
            error = translate(sdk, exc, time.perf_counter() - started)
            wait = _retry_wait(sdk, exc, attempt)
            if wait is None or attempt >= max_retries:
                raise error from exc
            left = deadline - time.perf_counter()
            if wait + _MIN_ATTEMPT_S > left:
                why = f"{error.detail}; not retried: the retry would wait {wait:.3g} s, and {max(left, 0):.3g} s of the deadline is left"
                raise LLMError(error.reason, why, latency_s=error.latency_s) from exc
            time.sleep(wait)
            attempt += 1
    latency = time.perf_counter() - started
    try:
        return load_json(body), latency
    except ValueError as exc:
        raise LLMError("malformed_response", f"the reply is {exc}: {body[:80]!r}", latency_s=latency) from None


def _read_body(httpx2: Any, response: Any, deadline: float, max_bytes: int, started: float) -> bytes:
    """The (decoded) body of `response`, or `LLMError`: too large (declared or read), still
    arriving at the deadline, or cut off."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise LLMError("too_large", f"the reply declares {int(declared):,} bytes; the limit is {max_bytes:,} ([llm] max_response_bytes)",
                       latency_s=time.perf_counter() - started)
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise LLMError("too_large", f"the reply passed {max_bytes:,} bytes ([llm] max_response_bytes)", latency_s=time.perf_counter() - started)
            chunks.append(chunk)
            if time.perf_counter() > deadline:
                raise LLMError("timeout", f"the reply was still arriving at the deadline ({size:,} bytes so far)", latency_s=time.perf_counter() - started)
    except httpx2.TimeoutException as exc:
        raise LLMError("timeout", f"the reply stopped arriving ({size:,} bytes so far): {type(exc).__name__}", latency_s=time.perf_counter() - started) from None
    except httpx2.HTTPError as exc:  # cut off, bad chunking, undecodable content encoding
        raise LLMError("connection", f"reading the reply failed after {size:,} bytes: {type(exc).__name__}: {exc}", latency_s=time.perf_counter() - started) from None
    return b"".join(chunks)


def _retry_wait(sdk: Any, exc: Exception, attempt: int) -> float | None:
    """How long to wait before retrying after `exc`, as the SDKs decide it; None: do not retry."""
    if isinstance(exc, sdk.APIStatusError):
        headers = exc.response.headers
        should = headers.get("x-should-retry")
        if should == "false" or (should != "true" and not (exc.status_code in (408, 409, 429) or exc.status_code >= 500)):
            return None
        after = _retry_after(headers)
        if after is not None and after > 0:
            return after
    elif not isinstance(exc, sdk.APIConnectionError):  # timeouts are connection errors too
        return None
    return min(_INITIAL_RETRY_DELAY * 2.0**attempt, _MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


def _retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms`, else `retry-after` (seconds or an HTTP date); None without."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / scale
        except ValueError:
            pass
    value = headers.get("retry-after")
    when = email.utils.parsedate_tz(value) if value else None
    if when is None:
        return None
    try:
        return float(email.utils.mktime_tz(when) - time.time())
    except (OverflowError, ValueError):
        return None
