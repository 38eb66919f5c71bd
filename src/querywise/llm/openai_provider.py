"""OpenAI-compatible chat completions through the official SDK, with a JSON-schema response format.

`base_url` points the same client at Ollama (`http://localhost:11434/v1`), vLLM, the llama.cpp
server or LM Studio; such servers usually need no key, so a missing key is allowed when
`base_url` is set. A `refusal`, or a finish reason other than `stop` (`length`,
`content_filter`...), means no plan.

The call keeps to `request.timeout_s` as one deadline, retries included, and reads the reply
itself, size- and depth-capped, instead of the SDK's parser (see `querywise.llm._http`): a reply
that is not a chat completion (`choices` null, no `message`, `content` null...) is
`LLMError("malformed_response")`. A missing `usage` is read as 0 tokens: local servers omit it.
"""

from __future__ import annotations

import os
from typing import Any

from querywise.llm._http import DEFAULT_MAX_RESPONSE_BYTES, post_json
from querywise.llm.provider import (
    LLMError,
    StructuredRequest,
    StructuredResult,
    parse_json_object,
    usage_of,
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
        max_retries: int | None = None,
        client: Any = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        """`max_retries`: retries within a call's deadline (default: the `client`'s, else 1)."""
        import openai

        self.model, self._sdk = model, openai
        if client is None:
            env = api_key_env or "OPENAI_API_KEY"
            key = os.environ.get(env)
            if not key and base_url is None:
                raise LLMError("unavailable", f"environment variable {env} is not set (the OpenAI API key)")
            client = openai.OpenAI(api_key=key or _LOCAL_KEY, base_url=base_url, max_retries=1 if max_retries is None else max_retries)
        self.client = client
        self.max_retries: int = client.max_retries if max_retries is None else max_retries
        self.max_response_bytes = max_response_bytes
        self._once = client.with_options(max_retries=0)  # one attempt per SDK call: the retries are ours, within the deadline

    def complete(self, request: StructuredRequest) -> StructuredResult:
        messages = [{"role": "system", "content": request.instructions}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "response_format": {"type": "json_schema", "json_schema": {"name": request.name, "schema": request.schema, "strict": True}},
            "max_tokens": request.max_tokens,
        }
        try:
            body, latency = post_json(
                self._sdk, lambda timeout: self._once.chat.completions.with_streaming_response.create(**kwargs, timeout=timeout),
                timeout_s=request.timeout_s, max_retries=self.max_retries, max_bytes=self.max_response_bytes,
            )
            return self._read(body, latency)
        except LLMError:
            raise
        except Exception as exc:  # a bug here or in the SDK: still one failure path
            raise LLMError("provider_error", f"{type(exc).__name__}: {exc}") from exc

    def _read(self, resp: Any, latency: float) -> StructuredResult:
        """The chat completion `resp` (parsed JSON, any shape) read into a result."""

        def malformed(why: str) -> LLMError:
            return LLMError("malformed_response", f"not a chat completion: {why}", usage=usage, latency_s=latency)

        usage = usage_of(resp.get("usage") if isinstance(resp, dict) else None, "prompt_tokens", "completion_tokens")
        if not isinstance(resp, dict):
            raise malformed(f"a JSON {type(resp).__name__}, not an object")
        choices = resp.get("choices")
        if not isinstance(choices, list) or not choices:
            raise malformed("no choices" if choices is None or choices == [] else f"choices is a {type(choices).__name__}")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise malformed("the first choice has no message")
        refusal = message.get("refusal")
        if refusal:
            raise LLMError("refusal", str(refusal), usage=usage, latency_s=latency)
        finish = str(choice.get("finish_reason"))
        if finish != "stop":
            reason: Any = {"length": "max_tokens", "content_filter": "refusal"}.get(finish, "stop")
            raise LLMError(reason, f"finish reason {finish!r}", usage=usage, latency_s=latency)
        content = message.get("content")
        if not isinstance(content, str):
            raise malformed(f"the message's content is {'null' if content is None else type(content).__name__}, not text")
        parsed = parse_json_object(content, usage=usage, latency_s=latency)
        model = resp.get("model")
        return StructuredResult(parsed=parsed, usage=usage, latency_s=latency, stop_reason=finish, model=model if isinstance(model, str) else self.model)

    def close(self) -> None:
        self.client.close()
