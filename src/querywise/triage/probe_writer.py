"""The LLM probe writer: a question the gold passage answers, in the passage's own vocabulary.

Plugs into triage as `write_probe`; the vocabulary rule is checked in code, so a question that
borrows a content word from outside the passage raises `LLMError("guard_rejected")` and triage
falls back to the deterministic probe, keeping the error as evidence.
"""

from __future__ import annotations

from querywise.checks.vocabulary import vocabulary_violations
from querywise.config import Settings
from querywise.llm.factory import provider_from
from querywise.llm.provider import LLMError, Provider
from querywise.llm.schemas import QuestionOutput
from querywise.llm.structured import call_structured
from querywise.triage.probes import WriteProbe

__all__ = ["generate_probe", "probe_writer_from"]


def generate_probe(provider: Provider, passage: str, *, timeout_s: float = 5.0) -> str:
    """A question `passage` answers, using only the passage's content words.

    >>> write_probe = lambda text: generate_probe(provider, text)   # doctest: +SKIP
    """
    out, result, _ = call_structured(
        provider, "probe", QuestionOutput, QuestionOutput.json_schema(), key=passage, content=f"Passage:\n{passage}", timeout_s=timeout_s
    )
    q = out.question.strip()
    if not q:
        raise LLMError("schema_violation", "empty question", usage=result.usage, latency_s=result.latency_s)
    if outside := vocabulary_violations(q, passage):
        raise LLMError("guard_rejected", f"probe {q!r} uses words not in the passage: {outside}", usage=result.usage, latency_s=result.latency_s)
    return q


def probe_writer_from(settings: Settings) -> WriteProbe | None:
    """The LLM probe writer of the `[llm]` provider, or None without one (deterministic probes).
    A provider that cannot be set up (no API key) fails every call; each case then keeps the
    deterministic probe and records the error."""
    provider = provider_from(settings.llm)
    if provider is None:
        return None
    return lambda passage: generate_probe(provider, passage, timeout_s=settings.llm.timeout_s)
