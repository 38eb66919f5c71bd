"""Fixtures of the LLM tests: the fake provider server and real SDK clients pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from querywise.llm.fake_server import FakeLLMServer


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(hang_s=1.0) as srv:
        yield srv


@pytest.fixture
def fake(server: FakeLLMServer) -> FakeLLMServer:
    """The module's server, with an empty queue and no recorded requests for this test."""
    server.state.queue.clear()
    server.state.requests.clear()
    return server


@pytest.fixture
def make_provider(fake: FakeLLMServer) -> Iterator[Callable[..., Any]]:
    """`make_provider("anthropic" | "openai", max_retries=0, **options)`: the real SDK client
    against the fake server, behind our provider class; closed after the test."""
    made: list[Any] = []

    def make(kind: str, *, max_retries: int = 0, **options: Any) -> Any:
        if kind == "anthropic":
            import anthropic

            from querywise.llm.anthropic_provider import AnthropicProvider

            client = anthropic.Anthropic(api_key="test-key", base_url=fake.url, max_retries=max_retries)
            p: Any = AnthropicProvider(model="claude-test", client=client, **options)
        else:
            import openai

            from querywise.llm.openai_provider import OpenAIProvider

            client = openai.OpenAI(api_key="test-key", base_url=fake.url + "/v1", max_retries=max_retries)
            p = OpenAIProvider(model="gpt-test", client=client, **options)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()
