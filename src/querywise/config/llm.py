"""`[llm]`: the LLM tier's provider, deadlines, failure policy and prices."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from querywise.config._section import _Section


class Price(_Section):
    """USD per million tokens, input and output."""

    usd_per_m_in: float = Field(ge=0)  # US dollars per million input tokens
    usd_per_m_out: float = Field(ge=0)  # US dollars per million output tokens


class LLMSettings(_Section):
    """The LLM tier. API keys are never in the file: only the NAME of the environment variable.

    Failure policy per route: "open" searches the deterministic plan (the raw message unless a
    deterministic move changed it), "closed" asks. Routes in `routing.high_stakes` are closed
    unless `fail_policy` says otherwise.
    """

    provider: Literal["none", "anthropic", "openai", "scripted", "llamacpp"] = "none"  # "none": no LLM, every LLM move off (their deterministic fallbacks run)
    model: str | None = None  # the provider's model name (needed for anthropic and openai)
    base_url: str | None = None  # OpenAI-compatible servers: Ollama, vLLM, llama.cpp server, LM Studio
    api_key_env: str | None = None  # default ANTHROPIC_API_KEY / OPENAI_API_KEY
    timeout_s: float = Field(2.0, gt=0, le=600)  # one deadline per message for all its LLM moves, retries included
    timeouts: dict[str, Annotated[float, Field(gt=0, le=600)]] = Field(default_factory=dict)  # route -> seconds
    fail_policy: dict[str, Literal["open", "closed"]] = Field(default_factory=dict)  # route -> policy
    # what a fail-closed route asks when its LLM call fails
    fail_closed_question: str = "Sorry, I could not work that out. Could you ask again with the product name?"
    max_retries: int = Field(1, ge=0)  # retries of 429 / 5xx / connection errors, made only when their wait fits in the deadline
    max_response_bytes: int = Field(65_536, ge=1024)  # a reply larger than this is a `too_large` fallback, never parsed
    max_tokens: int = Field(400, ge=16)  # the most output tokens one call may produce
    anthropic_output: Literal["json_schema", "tool"] = "json_schema"  # "tool": a forced tool call
    prices: dict[str, Price] = Field(default_factory=dict)  # model -> price
    default_price: Price | None = None  # for a model not in `prices`
    ttft_s: float = Field(0.4, ge=0)  # latency model of `querywise cost`
    tokens_per_s: float = Field(120.0, gt=0)  # output speed in the latency model of `querywise cost`
    fallback_warn_rate: float = Field(0.05, ge=0, le=1)  # the LLM budget report warns when this share of calls fell back
    n_variants: int = Field(3, ge=1, le=10)  # multi-query
    cache_size: int = Field(10_000, ge=0)  # single-turn results kept; 0 = no cache
    overlap: bool = True  # start retrieval for the raw message while the LLM runs
    scripted_file: Path | None = None  # provider = "scripted": JSONL of recorded responses
    gguf_path: Path | None = None  # provider = "llamacpp": a user-supplied GGUF model file

    @model_validator(mode="after")
    def _provider_needs(self) -> LLMSettings:
        if self.provider == "scripted" and self.scripted_file is None:
            raise ValueError("provider 'scripted' needs scripted_file")
        if self.provider == "llamacpp" and self.gguf_path is None:
            raise ValueError("provider 'llamacpp' needs gguf_path")
        if self.provider in ("anthropic", "openai") and not self.model:
            raise ValueError(f"provider {self.provider!r} needs model")
        return self

    def timeout_for(self, route: str | None) -> float:
        return self.timeouts.get(route or "", self.timeout_s)

    def price_for(self, model: str | None) -> Price | None:
        return self.prices.get(model or "", self.default_price)
