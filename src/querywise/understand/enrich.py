"""The LLM enrichments: multi-query variants, HyDE, query2doc and step-back, one call each.

Each answer is checked in code before it is returned (no repeats, nothing invented: a name,
identifier or number the query did not have), and a failed check raises `LLMError` exactly like
a failed call. Enrichments are searched next to the original, never instead of it.
"""

from __future__ import annotations

from querywise.catalog import Catalog
from querywise.checks.guard import check_rewrite
from querywise.llm.provider import LLMError, Provider, StructuredResult, normalise
from querywise.llm.schemas import PassageOutput, QuestionOutput, VariantsOutput
from querywise.llm.structured import call_structured, user_content
from querywise.understand.tier import Called

__all__ = ["hyde", "multi_query", "query2doc", "step_back"]


def _rejected(result: StructuredResult, why: str) -> LLMError:
    return LLMError("guard_rejected", why, usage=result.usage, latency_s=result.latency_s)


def _violation(result: StructuredResult, why: str) -> LLMError:
    return LLMError("schema_violation", why, usage=result.usage, latency_s=result.latency_s)


def _invented(text: str, source: str, catalog: Catalog | None) -> tuple[str, ...]:
    return check_rewrite(source, text, [], catalog=catalog).invented


def multi_query(
    provider: Provider, query: str, *, n: int = 3, catalog: Catalog | None = None, timeout_s: float = 2.0
) -> Called[list[str]]:
    """Up to `n` alternative phrasings; repeats of the query and variants that invent a name,
    identifier or number are dropped (and reported)."""
    out, result, version = call_structured(
        provider, "multi_query", VariantsOutput, VariantsOutput.json_schema(),
        key=query, content=user_content(query, extra=f"Number of variants: {n}"), timeout_s=timeout_s,
    )
    kept: list[str] = []
    dropped: list[str] = []
    seen = {normalise(query)}
    for v in out.variants:
        if not v.strip() or normalise(v) in seen:
            dropped.append(f"{v!r}: repeats the query or another variant")
        elif invented := _invented(v, query, catalog):
            dropped.append(f"{v!r}: invents {list(invented)}")
        else:
            kept.append(v.strip())
            seen.add(normalise(v))
    if not kept:
        raise _rejected(result, "no usable variant: " + "; ".join(dropped))
    return Called(kept[:n], result, version, notes=tuple(dropped))


def _passage(provider: Provider, task: str, query: str, timeout_s: float) -> Called[str]:
    out, result, version = call_structured(
        provider, task, PassageOutput, PassageOutput.json_schema(), key=query, content=user_content(query), timeout_s=timeout_s
    )
    if not out.passage.strip():
        raise _violation(result, "empty passage")
    return Called(out.passage.strip(), result, version)


def hyde(provider: Provider, query: str, *, timeout_s: float = 2.0) -> Called[str]:
    """A hypothetical answer passage, embedded and searched (dense) next to the query. Its facts
    are not checked: it only has to look like the passage that answers."""
    return _passage(provider, "hyde", query, timeout_s)


def query2doc(provider: Provider, query: str, *, timeout_s: float = 2.0) -> Called[str]:
    """A pseudo-document; the caller appends it to the query for BM25 (Wang et al., 2023)."""
    return _passage(provider, "query2doc", query, timeout_s)


def step_back(provider: Provider, query: str, *, catalog: Catalog | None = None, timeout_s: float = 2.0) -> Called[str]:
    """The general question behind a specific one; it may drop names, never invent them."""
    out, result, version = call_structured(
        provider, "step_back", QuestionOutput, QuestionOutput.json_schema(), key=query, content=user_content(query), timeout_s=timeout_s
    )
    q = out.question.strip()
    if not q or normalise(q) == normalise(query):
        raise _violation(result, "no step-back question different from the query")
    if invented := _invented(q, query, catalog):
        raise _rejected(result, f"step-back question {q!r} invents {list(invented)}")
    return Called(q, result, version)
