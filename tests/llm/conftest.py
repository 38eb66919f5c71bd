"""Fixtures of the LLM tests: the fake provider server and real SDK clients pointed at it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from querywise.llm.fake_server import FakeLLMServer

_SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _waited_for_cpu_s() -> float:
    """How long the calling thread has been runnable without running (Linux's schedstat; 0 elsewhere)."""
    try:
        return int(_SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Stopwatch:
    """The calling thread's wall time since it was made, less the time the thread waited for a CPU.

    A deadline bounds how long a plan waits on the LLM, not how long a loaded machine keeps a
    runnable thread off its cores (CI runs a quick suite beside the full one on two cores: the
    whole plan of an instant 429 once took 0.96 s there). That wait is measured, not guessed, and
    is the machine's; where it cannot be read this is plain wall time."""

    def __init__(self) -> None:
        self._started, self._queued = time.perf_counter(), _waited_for_cpu_s()

    def elapsed(self) -> float:
        return time.perf_counter() - self._started - (_waited_for_cpu_s() - self._queued)


@pytest.fixture
def stopwatch() -> type[Stopwatch]:
    """`clock = stopwatch()` ... `clock.elapsed()`: how long a call kept its thread, less the machine's load."""
    return Stopwatch


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
