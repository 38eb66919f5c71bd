"""Anthropic through the official SDK, with structured outputs.

The schema goes out as `output_config={"format": {"type": "json_schema", "schema": ...}}` (the
SDK's structured-output parameter); `anthropic_output = "tool"` instead forces a tool call whose
input schema is the same schema, for models without structured outputs. Any stop reason other
than a normal end (`end_turn`, or `tool_use` in tool mode) means no plan: `max_tokens`,
`refusal`, `pause_turn`... raise `LLMError`.
"""

from __future__ import annotations

import os
import time
from typing import Any, Literal

from querywise.llm._errors import translate
from querywise.llm.provider import (
    LLMError,
    StructuredRequest,
    StructuredResult,
    Usage,
    parse_json_object,
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
        max_retries: int = 1,
        output: Literal["json_schema", "tool"] = "json_schema",
        client: Any = None,
    ) -> None:
        import anthropic

        self.model, self.output, self._sdk = model, output, anthropic
        if client is None:
            env = api_key_env or "ANTHROPIC_API_KEY"
            key = os.environ.get(env)
            if not key:
                raise LLMError("unavailable", f"environment variable {env} is not set (the Anthropic API key)")
            client = anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=max_retries)
        self.client = client

    def complete(self, request: StructuredRequest) -> StructuredResult:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.instructions,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "timeout": request.timeout_s,
        }
        if self.output == "tool":
            kwargs["tools"] = [{"name": _TOOL, "description": f"Return the {request.name} result.", "input_schema": request.schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": _TOOL}
        else:
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": request.schema}}
        started = time.perf_counter()
        try:
            msg = self.client.messages.create(**kwargs)
        except self._sdk.APIError as exc:
            raise translate(self._sdk, exc, time.perf_counter() - started) from exc
        latency = time.perf_counter() - started
        usage = Usage(input_tokens=msg.usage.input_tokens, output_tokens=msg.usage.output_tokens)
        normal = "tool_use" if self.output == "tool" else "end_turn"
        stop = str(msg.stop_reason)
        if stop != normal:
            reason: Any = stop if stop in ("refusal", "max_tokens") else "stop"
            raise LLMError(reason, f"stop reason {stop!r}", usage=usage, latency_s=latency)
        if self.output == "tool":
            block = next((b for b in msg.content if getattr(b, "type", None) == "tool_use"), None)
            if block is None or not isinstance(block.input, dict):
                raise LLMError("malformed_json", "no tool_use block with an object input", usage=usage, latency_s=latency)
            parsed = dict(block.input)
        else:
            text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", None) == "text")
            parsed = parse_json_object(text, usage=usage, latency_s=latency)
        return StructuredResult(parsed=parsed, usage=usage, latency_s=latency, stop_reason=stop, model=str(msg.model))

    def close(self) -> None:
        self.client.close()
