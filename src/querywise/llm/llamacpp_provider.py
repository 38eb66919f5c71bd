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
    Usage,
    parse_json_object,
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
        # In-process generation cannot be interrupted: the timeout is checked after the fact
        # (the pipeline still falls back, but the time is spent).
        messages = [{"role": "system", "content": request.instructions}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        started = time.perf_counter()
        out = self.llama.create_chat_completion(
            messages=messages, response_format={"type": "json_object", "schema": request.schema}, max_tokens=request.max_tokens
        )
        latency = time.perf_counter() - started
        u = out.get("usage") or {}
        usage = Usage(input_tokens=u.get("prompt_tokens", 0), output_tokens=u.get("completion_tokens", 0))
        if latency > request.timeout_s:
            raise LLMError("timeout", f"{latency:.2f}s > {request.timeout_s}s", usage=usage, latency_s=latency)
        choice = out["choices"][0]
        if choice.get("finish_reason") != "stop":
            raise LLMError("max_tokens" if choice.get("finish_reason") == "length" else "stop", f"finish reason {choice.get('finish_reason')!r}", usage=usage, latency_s=latency)
        parsed = parse_json_object(choice["message"].get("content") or "", usage=usage, latency_s=latency)
        return StructuredResult(parsed=parsed, usage=usage, latency_s=latency, stop_reason="stop", model=self.model)

    def close(self) -> None:
        return None
