"""The real `anthropic` and `openai` SDK clients against the fake server: what goes out, what
comes back, and how every fault becomes an `LLMError` with the reason the budget counts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from querywise.config import LLMSettings
from querywise.files import InputError
from querywise.llm.factory import provider_from
from querywise.llm.fake_server import FAULTS, FakeLLMServer, Reply
from querywise.llm.provider import (
    MAX_JSON_DEPTH,
    LLMError,
    Message,
    StructuredRequest,
    UnavailableProvider,
    Usage,
    json_depth,
    load_json,
    normalise,
)
from querywise.llm.schemas import nullable, strict_object
from querywise.llm.scripted import ScriptedProvider

SCHEMA = strict_object({"standalone": nullable({"type": "string"}), "clarifying_question": nullable({"type": "string"}), "options": nullable({"type": "array", "items": {"type": "string"}})})
REQUEST = StructuredRequest(
    name="rewrite", instructions="Rewrite it.", messages=(Message("user", "does it fold?"),), schema=SCHEMA, key="does it fold?", timeout_s=0.5, max_tokens=123
)
KINDS = ["anthropic", "openai"]


@pytest.mark.parametrize("kind", KINDS)
def test_structured_call_sends_the_schema_and_reads_object_usage_and_stop(kind: str, fake: FakeLLMServer, make_provider: Callable[..., Any]) -> None:
    fake.play(Reply(output={"standalone": "Does the Aero X2 fold?", "clarifying_question": None, "options": None}, input_tokens=612, output_tokens=41))
    result = make_provider(kind).complete(REQUEST)
    assert result.parsed["standalone"] == "Does the Aero X2 fold?"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (612, 41)
    assert result.latency_s > 0
    (api, body), = fake.requests
    assert api == kind and body["max_tokens"] == 123
    if kind == "anthropic":
        assert result.stop_reason == "end_turn"
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
        assert body["system"] == "Rewrite it." and body["messages"] == [{"role": "user", "content": "does it fold?"}]
    else:
        assert result.stop_reason == "stop"
        assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "rewrite", "schema": SCHEMA, "strict": True}}
        assert body["messages"][0] == {"role": "system", "content": "Rewrite it."}


def test_anthropic_tool_mode_forces_a_tool_call_with_the_schema(fake: FakeLLMServer, make_provider: Callable[..., Any]) -> None:
    fake.play(Reply(output={"standalone": None, "clarifying_question": "Which one?", "options": ["A", "B"]}))
    result = make_provider("anthropic", output="tool").complete(REQUEST)
    assert result.parsed["options"] == ["A", "B"] and result.stop_reason == "tool_use"
    body = fake.requests[0][1]
    assert body["tools"][0]["input_schema"] == SCHEMA and body["tool_choice"]["type"] == "tool"
    assert "output_config" not in body


# fault -> the reason the provider raises (through the real SDK client, one deadline of 0.5 s)
PROVIDER_FAULTS = {
    "timeout": "timeout", "trickle": "timeout", "429": "rate_limited", "500": "server_error",
    "retry_after_30": "rate_limited", "retry_after_3600": "rate_limited", "disconnect": "connection",
    "malformed_json": "malformed_json", "deep_output": "malformed_json", "refusal": "refusal", "max_tokens": "max_tokens",
    "html": "malformed_response", "json_list": "malformed_response", "empty_object": "malformed_response",
    "choices_null": "malformed_response", "no_message": "malformed_response", "content_null": "malformed_response",
    "deep_nesting": "malformed_response", "oversized": "too_large", "oversized_declared": "too_large",
}  # fmt: skip


def test_every_fault_of_the_fake_server_is_covered() -> None:
    assert set(FAULTS) == {*PROVIDER_FAULTS, "no_usage"}  # no_usage is an answer: see below


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("fault", "reason"), PROVIDER_FAULTS.items())
def test_every_fault_is_an_llm_error_with_its_reason_within_the_deadline(
    kind: str, fault: str, reason: str, fake: FakeLLMServer, make_provider: Callable[..., Any], stopwatch: Callable[[], Any]
) -> None:
    fake.respond_with(Reply(output={"standalone": "x"}, fault=fault))  # type: ignore[arg-type]
    provider = make_provider(kind, max_retries=1)
    clock = stopwatch()
    with pytest.raises(LLMError) as info:
        provider.complete(REQUEST)
    elapsed = clock.elapsed()
    assert info.value.reason == reason, info.value
    # One deadline for the call, retries and slow bodies included (the server hangs 1 s, asks to
    # wait 30 s or an hour, or trickles a byte every 50 ms): the provider keeps to it by itself.
    assert elapsed < REQUEST.timeout_s + 0.1, (fault, elapsed)
    if fault in ("429", "500"):  # retried once (Retry-After: 1 ms fits), then given up
        assert len(fake.requests) == 2
    if fault in ("timeout", "trickle", "retry_after_30", "retry_after_3600"):  # a retry would not fit: not made
        assert len(fake.requests) == 1
    if fault.startswith("retry_after"):
        assert "not retried" in info.value.detail and elapsed < 0.1
    fake.respond_with(Reply(output={}))


@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_without_usage_is_an_answer_with_zero_tokens(kind: str, fake: FakeLLMServer, make_provider: Callable[..., Any]) -> None:
    fake.play(Reply(output={"standalone": "ok"}, fault="no_usage"))
    result = make_provider(kind).complete(REQUEST)
    assert result.parsed == {"standalone": "ok"} and result.usage == Usage()


@pytest.mark.parametrize("kind", KINDS)
def test_the_size_limit_is_the_providers_setting(kind: str, fake: FakeLLMServer, make_provider: Callable[..., Any]) -> None:
    big = {"standalone": "x" * 3000}
    fake.play(Reply(output=big), Reply(output=big))
    assert make_provider(kind).complete(REQUEST).parsed == big  # ~3 KB: well under the 64 KB default
    with pytest.raises(LLMError) as info:
        make_provider(kind, max_response_bytes=2048).complete(REQUEST)
    assert info.value.reason == "too_large" and "2,048" in info.value.detail


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_then_success_is_retried_by_the_sdk(kind: str, fake: FakeLLMServer, make_provider: Callable[..., Any]) -> None:
    fake.play(Reply(fault="429"), Reply(output={"standalone": "ok"}))
    assert make_provider(kind, max_retries=1).complete(REQUEST).parsed == {"standalone": "ok"}
    assert len(fake.requests) == 2


def test_keys_come_from_the_environment_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_ANTHROPIC_KEY", raising=False)
    missing = provider_from(LLMSettings(provider="anthropic", model="m", api_key_env="MY_ANTHROPIC_KEY"))
    # No key: not an exception at start-up but a provider whose every call is an "unavailable" fallback.
    assert isinstance(missing, UnavailableProvider) and missing.model == "m"
    with pytest.raises(LLMError, match="MY_ANTHROPIC_KEY is not set") as info:
        missing.complete(REQUEST)
    assert info.value.reason == "unavailable"
    monkeypatch.setenv("MY_ANTHROPIC_KEY", "sk-from-env")
    p = provider_from(LLMSettings(provider="anthropic", model="m", api_key_env="MY_ANTHROPIC_KEY", max_retries=3, max_response_bytes=4096))
    assert p is not None and p.client.api_key == "sk-from-env"  # type: ignore[attr-defined]
    assert (p.max_retries, p.max_response_bytes) == (3, 4096)  # type: ignore[attr-defined]
    p.close()
    # An OpenAI-compatible local server (Ollama, vLLM...) needs no key.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    local = provider_from(LLMSettings(provider="openai", model="qwen2.5:3b", base_url="http://127.0.0.1:11434/v1"))
    assert local is not None and str(local.client.base_url).startswith("http://127.0.0.1:11434/v1")  # type: ignore[attr-defined]
    assert local.max_response_bytes == LLMSettings().max_response_bytes == 65_536  # type: ignore[attr-defined]
    local.close()
    assert provider_from(LLMSettings()) is None


def test_llamacpp_without_the_extra_says_how_to_install(tmp_path: Path) -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        p = provider_from(LLMSettings(provider="llamacpp", gguf_path=tmp_path / "model.gguf"))
        assert isinstance(p, UnavailableProvider)
        with pytest.raises(LLMError, match=r'pip install "querywise\[llamacpp\]"'):
            p.complete(REQUEST)
    else:  # pragma: no cover - only where the extra is installed
        pytest.skip("llama-cpp-python is installed")


def test_json_is_read_without_unbounded_recursion() -> None:
    assert load_json(b'{"a": [1, {"b": "[[[[ {{{{"}]}') == {"a": [1, {"b": "[[[[ {{{{"}]}  # brackets in strings do not count
    assert load_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    for deep in ("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "[" * 1_000_000, '{"a":' * 100_000):
        with pytest.raises(ValueError, match="nested deeper than 64"):
            load_json(deep)
    with pytest.raises(ValueError, match="not JSON"):
        load_json(b"<html>502</html>")
    with pytest.raises(ValueError, match="not JSON"):
        load_json(b"\xff\xfe{")
    assert json_depth(b'["\\"", [[]]]') == 3  # an escaped quote does not end the string


def test_scripted_provider_keys_on_task_and_normalised_input(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_text(
        '{"task": "rewrite", "input": "Does  IT fold?", "output": {"standalone": null}, "usage": {"input_tokens": 5, "output_tokens": 2}}\n'
        '{"task": "hyde", "input": "does it fold?", "error": "refusal"}\n',
        encoding="utf-8",
    )
    p = ScriptedProvider.load(path)
    r = p.complete(REQUEST)
    assert r.parsed == {"standalone": None} and r.usage.output_tokens == 2
    with pytest.raises(LLMError) as info:
        p.complete(StructuredRequest("hyde", "", (), {}, key="does it fold?"))
    assert info.value.reason == "refusal"
    with pytest.raises(LLMError) as info:
        p.complete(StructuredRequest("rewrite", "", (), {}, key="does it swim?"))
    assert info.value.reason == "not_scripted"
    assert normalise(" A\tB ") == "a b"


def test_scripted_file_errors_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"task": "plan", "input": "x", "output": {}}\n{"task": "plan", "input": "y", "output": "not an object"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl.*2"):
        ScriptedProvider.load(path)
    path.write_text('{"task": "plan", "input": "x", "error": "gremlins"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="unknown error 'gremlins'"):
        ScriptedProvider.load(path)
