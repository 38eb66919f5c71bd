"""The provider named in `[llm]`, built lazily (SDKs import on first use)."""

from __future__ import annotations

from querywise.config import LLMSettings
from querywise.llm.provider import Provider

__all__ = ["provider_from"]


def provider_from(settings: LLMSettings) -> Provider | None:
    """The configured provider, or None for `provider = "none"`.

    Raises `LLMError("unavailable")` when it cannot be set up (no API key in the environment,
    the llama.cpp extra missing); the caller decides whether that is fatal.
    """
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
                                 max_retries=settings.max_retries, output=settings.anthropic_output)
    if kind == "openai":
        from querywise.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(model=settings.model or "", api_key_env=settings.api_key_env, base_url=settings.base_url,
                              max_retries=settings.max_retries)
    from querywise.llm.llamacpp_provider import LlamaCppProvider

    assert settings.gguf_path is not None
    return LlamaCppProvider(gguf_path=settings.gguf_path)
