"""The LLM tier: providers behind one small interface (Anthropic, OpenAI-compatible, scripted,
optional llama.cpp), the one structured plan call, the LLM moves, budgets, cost model and cache.

Importing this package does not import any SDK: providers import theirs when built.
"""

from querywise.llm.budget import Budget, BudgetReport
from querywise.llm.cost import CostModel, cost_model
from querywise.llm.factory import provider_from
from querywise.llm.provider import (
    LLMError,
    Message,
    Provider,
    StructuredRequest,
    StructuredResult,
    Usage,
)
from querywise.llm.scripted import ScriptedProvider

__all__ = [
    "Budget",
    "BudgetReport",
    "CostModel",
    "LLMError",
    "Message",
    "Provider",
    "ScriptedProvider",
    "StructuredRequest",
    "StructuredResult",
    "Usage",
    "cost_model",
    "provider_from",
]
