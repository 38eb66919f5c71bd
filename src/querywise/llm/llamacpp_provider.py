"""In-process llama.cpp on a user-supplied GGUF file (optional: `pip install "querywise[llamacpp]"`).

`llama-cpp-python` compiles from source (about 14 minutes on 2 cores), so it is never a default
dependency; this module imports it only when the provider is chosen. Output is constrained by
the same JSON schema through llama.cpp's grammar-based `response_format`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from querywise.llm.provider import (
    LLMError,
    StructuredRequest,
    StructuredResult,
    parse_json_object,
    usage_of,
)

__all__ = ["LlamaCppProvider"]

INSTALL_HINT = 'pip install "querywise[llamacpp]"  (or: pip install llama-cpp-python)'


class LlamaCppProvider:
    name = "llamacpp"

    def __init__(self, *, gguf_path: Path, n_ctx: int = 4096, llama: Any = None) -> None:
        if llama is None:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise LLMError("unavailable", f"llama-cpp-python is not installed: {INSTALL_HINT}") from None
            if not Path(gguf_path).exists():
                raise LLMError("unavailable", f"{gguf_path}: no such GGUF file")
            llama = Llama(model_path=str(gguf_path), n_ctx=n_ctx, verbose=False)
        self.llama, self.model = llama, Path(gguf_path).name

    def complete(self, request: StructuredRequest) -> StructuredResult:
        # In-process generation cannot be interrupted: the LLM tier stops waiting at the deadline
        # (the call is abandoned and runs on in its thread); the timeout is checked after the fact too.
        messages = [{"role": "system", "content": request.instructions}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        started = time.perf_counter()
        try:
            out = self.llama.create_chat_completion(
                messages=messages, response_format={"type": "json_object", "schema": request.schema}, max_tokens=request.max_tokens
            )
        except Exception as exc:
            raise LLMError("provider_error", f"{type(exc).__name__}: {exc}", latency_s=time.perf_counter() - started) from exc
        latency = time.perf_counter() - started
        usage = usage_of(out.get("usage") if isinstance(out, dict) else None, "prompt_tokens", "completion_tokens")
        if latency > request.timeout_s:
            raise LLMError("timeout", f"{latency:.2f}s > {request.timeout_s}s", usage=usage, latency_s=latency)
        choices = out.get("choices") if isinstance(out, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(message, dict):
            raise LLMError("malformed_response", "not a chat completion: no choice with a message", usage=usage, latency_s=latency)
        finish = choice.get("finish_reason")
        if finish != "stop":
            raise LLMError("max_tokens" if finish == "length" else "stop", f"finish reason {finish!r}", usage=usage, latency_s=latency)
        content = message.get("content")
        if not isinstance(content, str):
            raise LLMError("malformed_response", "not a chat completion: the message's content is not text", usage=usage, latency_s=latency)
        parsed = parse_json_object(content, usage=usage, latency_s=latency)
        return StructuredResult(parsed=parsed, usage=usage, latency_s=latency, stop_reason="stop", model=self.model)

    def close(self) -> None:
        return None
