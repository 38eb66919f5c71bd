"""Anthropic through the official SDK, with structured outputs.

The schema goes out as `output_config={"format": {"type": "json_schema", "schema": ...}}` (the
SDK's structured-output parameter); `anthropic_output = "tool"` instead forces a tool call whose
input schema is the same schema, for models without structured outputs. Any stop reason other
than a normal end (`end_turn`, or `tool_use` in tool mode) means no plan: `max_tokens`,
`refusal`, `pause_turn`... raise `LLMError`.

The call keeps to `request.timeout_s` as one deadline, retries included, and reads the reply
itself, size- and depth-capped, instead of the SDK's parser (see `querywise.llm._http`): a reply
that is not a Messages API object is `LLMError("malformed_response")`, never an exception from
deep inside a response object.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from querywise.llm._http import DEFAULT_MAX_RESPONSE_BYTES, post_json
from querywise.llm.provider import (
    LLMError,
    StructuredRequest,
    StructuredResult,
    parse_json_object,
    usage_of,
)

__all__ = ["AnthropicProvider"]

_TOOL = "emit"


class AnthropicProvider:
    """`anthropic.Anthropic` behind the `Provider` interface.

    >>> p = AnthropicProvider(model="claude-haiku-4-5", api_key_env="ANTHROPIC_API_KEY")  # doctest: +SKIP
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        api_key_env: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        output: Literal["json_schema", "tool"] = "json_schema",
        client: Any = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        """`max_retries`: retries within a call's deadline (default: the `client`'s, else 1)."""
        import anthropic

        self.model, self.output, self._sdk = model, output, anthropic
        if client is None:
            env = api_key_env or "ANTHROPIC_API_KEY"
            key = os.environ.get(env)
            if not key:
                raise LLMError("unavailable", f"environment variable {env} is not set (the Anthropic API key)")
            client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=1 if max_retries is None else max_retries)
        self.client = client
        self.max_retries: int = client.max_retries if max_retries is None else max_retries
        self.max_response_bytes = max_response_bytes
        self._once = client.with_options(max_retries=0)  # one attempt per SDK call: the retries are ours, within the deadline

    def complete(self, request: StructuredRequest) -> StructuredResult:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.instructions,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        if self.output == "tool":
            kwargs["tools"] = [{"name": _TOOL, "description": f"Return the {request.name} result.", "input_schema": request.schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": _TOOL}
        else:
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": request.schema}}
        try:
            body, latency = post_json(
                self._sdk, lambda timeout: self._once.messages.with_streaming_response.create(**kwargs, timeout=timeout),
                timeout_s=request.timeout_s, max_retries=self.max_retries, max_bytes=self.max_response_bytes,
            )
            return self._read(body, latency)
        except LLMError:
            raise
        except Exception as exc:  # a bug here or in the SDK: still one failure path
            raise LLMError("provider_error", f"{type(exc).__name__}: {exc}") from exc

    def _read(self, msg: Any, latency: float) -> StructuredResult:
        """The Messages API object `msg` (parsed JSON, any shape) read into a result."""

        def malformed(why: str) -> LLMError:
            return LLMError("malformed_response", f"not a Messages API reply: {why}", usage=usage, latency_s=latency)

        usage = usage_of(msg.get("usage") if isinstance(msg, dict) else None, "input_tokens", "output_tokens")
        if not isinstance(msg, dict):
            raise malformed(f"a JSON {type(msg).__name__}, not an object")
        blocks = msg.get("content")
        if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
            raise malformed(f"content is {type(blocks).__name__ if blocks is not None else 'missing or null'}, not a list of blocks")
        normal = "tool_use" if self.output == "tool" else "end_turn"
        stop = str(msg.get("stop_reason"))
        if stop != normal:
            reason: Any = stop if stop in ("refusal", "max_tokens") else "stop"
            raise LLMError(reason, f"stop reason {stop!r}", usage=usage, latency_s=latency)
        if self.output == "tool":
            block = next((b for b in blocks if b.get("type") == "tool_use"), None)
            if block is None or not isinstance(block.get("input"), dict):
                raise LLMError("malformed_json", "no tool_use block with an object input", usage=usage, latency_s=latency)
            parsed = dict(block["input"])
        else:
            texts = [b.get("text") for b in blocks if b.get("type") == "text"]
            if not texts or not all(isinstance(t, str) for t in texts):
                raise malformed("no text block with a string text")
            parsed = parse_json_object("".join(texts), usage=usage, latency_s=latency)
        model = msg.get("model")
        return StructuredResult(parsed=parsed, usage=usage, latency_s=latency, stop_reason=stop, model=model if isinstance(model, str) else self.model)

    def close(self) -> None:
        self.client.close()
