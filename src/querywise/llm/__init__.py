"""The LLM transport: providers behind one small interface (Anthropic, OpenAI-compatible,
scripted, optional llama.cpp), structured calls with versioned prompts and strict schemas,
budgets, the cost model, the single-turn cache, and a fake provider server for tests.

What the calls are *for* (the plan call, the enrichments, the probe writer) lives with the moves
in `querywise.understand` and `querywise.triage`. `FakeLLMServer` is exported on purpose: it
speaks the Anthropic and OpenAI HTTP APIs on 127.0.0.1, so your own tests can drive the real SDK
clients through recorded replies and injected faults.

Importing this package does not import any SDK: providers import theirs when built.
"""

from querywise.llm.budget import Budget, BudgetReport
from querywise.llm.cost import CostModel, cost_model
from querywise.llm.factory import provider_from
from querywise.llm.fake_server import FAULTS, FakeLLMServer, Fault, Reply
from querywise.llm.provider import (
    FailureReason,
    LLMError,
    Message,
    Provider,
    StructuredRequest,
    StructuredResult,
    UnavailableProvider,
    Usage,
)
from querywise.llm.scripted import ScriptedProvider
from querywise.llm.structured import call_structured

__all__ = [
    "FAULTS",
    "Budget",
    "BudgetReport",
    "CostModel",
    "FailureReason",
    "FakeLLMServer",
    "Fault",
    "LLMError",
    "Message",
    "Provider",
    "Reply",
    "ScriptedProvider",
    "StructuredRequest",
    "StructuredResult",
    "UnavailableProvider",
    "Usage",
    "call_structured",
    "cost_model",
    "provider_from",
]
