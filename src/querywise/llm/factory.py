"""The provider named in `[llm]`, built lazily (SDKs import on first use)."""

from __future__ import annotations

import logging

from querywise.config import LLMSettings
from querywise.llm.provider import LLMError, Provider, UnavailableProvider

__all__ = ["provider_from"]

log = logging.getLogger("querywise.llm")


def provider_from(settings: LLMSettings) -> Provider | None:
    """The configured provider, or None for `provider = "none"`.

    A provider that cannot be set up (no API key in the environment, the llama.cpp extra or the
    GGUF file missing) is an `UnavailableProvider`: every call raises `LLMError("unavailable")`,
    so the LLM tier falls back by route policy and counts it, and a warning is logged once here.
    A scripted file that does not parse is a configuration error (`InputError`), raised.
    """
    try:
        return _build(settings)
    except LLMError as exc:
        log.warning("[llm] provider %r is unavailable: %s; every LLM move falls back", settings.provider, exc.detail)
        return UnavailableProvider(settings.provider, settings.model or "", exc.detail)


def _build(settings: LLMSettings) -> Provider | None:
    kind = settings.provider
    if kind == "none":
        return None
    if kind == "scripted":
        from querywise.llm.scripted import ScriptedProvider

        assert settings.scripted_file is not None  # the settings validator guarantees it
        return ScriptedProvider.load(settings.scripted_file)
    if kind == "anthropic":
        from querywise.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(model=settings.model or "", api_key_env=settings.api_key_env, base_url=settings.base_url,
                                 max_retries=settings.max_retries, output=settings.anthropic_output,
                                 max_response_bytes=settings.max_response_bytes)
    if kind == "openai":
        from querywise.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(model=settings.model or "", api_key_env=settings.api_key_env, base_url=settings.base_url,
                              max_retries=settings.max_retries, max_response_bytes=settings.max_response_bytes)
    from querywise.llm.llamacpp_provider import LlamaCppProvider

    assert settings.gguf_path is not None
    return LlamaCppProvider(gguf_path=settings.gguf_path)
