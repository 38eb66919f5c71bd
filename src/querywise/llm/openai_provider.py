"""OpenAI-compatible chat completions through the official SDK, with a JSON-schema response format.

`base_url` points the same client at Ollama (`http://localhost:11434/v1`), vLLM, the llama.cpp
server or LM Studio; such servers usually need no key, so a missing key is allowed when
`base_url` is set. A `refusal`, or a finish reason other than `stop` (`length`,
`content_filter`...), means no plan.
"""

from __future__ import annotations

import os
import time
from typing import Any

from querywise.llm._errors import translate
from querywise.llm.provider import (
    LLMError,
    StructuredRequest,
    StructuredResult,
    Usage,
    parse_json_object,
)

__all__ = ["OpenAIProvider"]

_LOCAL_KEY = "not-needed"  # local OpenAI-compatible servers ignore the key but the SDK wants one


class OpenAIProvider:
    """`openai.OpenAI` behind the `Provider` interface.

    >>> p = OpenAIProvider(model="qwen2.5:3b", base_url="http://localhost:11434/v1")  # doctest: +SKIP
    """

    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        api_key_env: str | None = None,
        base_url: str | None = None,
        max_retries: int = 1,
        client: Any = None,
    ) -> None:
        import openai

        self.model, self._sdk = model, openai
        if client is None:
            env = api_key_env or "OPENAI_API_KEY"
            key = os.environ.get(env)
            if not key and base_url is None:
                raise LLMError("unavailable", f"environment variable {env} is not set (the OpenAI API key)")
            client = openai.OpenAI(api_key=key or _LOCAL_KEY, base_url=base_url, max_retries=max_retries)
        self.client = client

    def complete(self, request: StructuredRequest) -> StructuredResult:
        messages = [{"role": "system", "content": request.instructions}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        started = time.perf_counter()
        try:
            resp = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                response_format={"type": "json_schema", "json_schema": {"name": request.name, "schema": request.schema, "strict": True}},
                max_tokens=request.max_tokens,
                timeout=request.timeout_s,
            )
        except self._sdk.APIError as exc:
            raise translate(self._sdk, exc, time.perf_counter() - started) from exc
        latency = time.perf_counter() - started
        u = resp.usage
        usage = Usage(input_tokens=u.prompt_tokens, output_tokens=u.completion_tokens) if u is not None else Usage()
        if not resp.choices:
            raise LLMError("malformed_json", "no choices in the response", usage=usage, latency_s=latency)
        choice = resp.choices[0]
        if choice.message.refusal:
            raise LLMError("refusal", choice.message.refusal, usage=usage, latency_s=latency)
        finish = str(choice.finish_reason)
        if finish != "stop":
            reason: Any = {"length": "max_tokens", "content_filter": "refusal"}.get(finish, "stop")
            raise LLMError(reason, f"finish reason {finish!r}", usage=usage, latency_s=latency)
        parsed = parse_json_object(choice.message.content or "", usage=usage, latency_s=latency)
        return StructuredResult(parsed=parsed, usage=usage, latency_s=latency, stop_reason=finish, model=str(resp.model))

    def close(self) -> None:
        self.client.close()
