"""The LLM moves, one function each: standalone rewrite, multi-query, HyDE, query2doc,
step-back, the unsure-router tier, filter extraction and the triage probe.

Each makes one structured call and checks the answer in code before returning it: the rewrite
guard (nothing lost, nothing invented), enums, the filter validator, the probe's vocabulary.
A failed check raises `LLMError` ("schema_violation", "guard_rejected"), exactly like a failed
call, so callers have one failure path. Enrichments (variants, HyDE, step-back, query2doc) are
meant to be searched next to the original, never instead of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from querywise.catalog import Catalog
from querywise.conditions import Where
from querywise.config import AccessSettings, FilterSettings, RouteSpec
from querywise.llm.prompt import load_prompt
from querywise.llm.provider import (
    LLMError,
    Message,
    Provider,
    StructuredRequest,
    StructuredResult,
    normalise,
)
from querywise.llm.schemas import (
    FiltersOutput,
    PassageOutput,
    QuestionOutput,
    RewriteOutput,
    RouteOutput,
    VariantsOutput,
    clean_filters,
    filters_schema,
)
from querywise.plan import Ask
from querywise.checks.vocabulary import vocabulary_violations
from querywise.understand.filters import Dropped, validate_filters
from querywise.checks.guard import check_rewrite

__all__ = [
    "Called",
    "Rewrite",
    "call_structured",
    "conversation_key",
    "extract_filters_llm",
    "generate_probe",
    "hyde",
    "multi_query",
    "query2doc",
    "rewrite_standalone",
    "route_unsure",
    "step_back",
    "user_content",
]

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True)
class Called(Generic[T]):
    """A move's checked value, the call that produced it, and what the checks removed."""

    value: T
    result: StructuredResult
    prompt_version: str
    dropped: tuple[str, ...] = ()


def conversation_key(message: str, history: Sequence[str] = ()) -> str:
    """Earlier user turns and the message, one per line: the input a response is keyed by."""
    return "\n".join([*history, message])


def user_content(message: str, history: Sequence[str] = (), extra: str = "") -> str:
    parts = []
    if history:
        parts.append("Conversation so far (earlier user turns, oldest first):\n" + "\n".join(f"- {t}" for t in history))
    parts.append(f"Message: {message}")
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def call_structured(
    provider: Provider,
    task: str,
    model: type[M],
    schema: dict[str, Any],
    *,
    key: str,
    content: str,
    timeout_s: float,
    max_tokens: int = 400,
) -> tuple[M, StructuredResult, str]:
    """One structured call of `task`, its answer read strictly into `model`."""
    prompt = load_prompt(task)
    request = StructuredRequest(
        name=task, instructions=prompt.instructions, messages=(Message("user", content),), schema=schema,
        key=key, timeout_s=timeout_s, max_tokens=max_tokens,
    )  # fmt: skip
    result = provider.complete(request)
    try:
        value = model.model_validate(result.parsed)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors())
        raise LLMError("schema_violation", problems, usage=result.usage, latency_s=result.latency_s) from None
    return value, result, prompt.version


def _rejected(result: StructuredResult, why: str) -> LLMError:
    return LLMError("guard_rejected", why, usage=result.usage, latency_s=result.latency_s)


def _violation(result: StructuredResult, why: str) -> LLMError:
    return LLMError("schema_violation", why, usage=result.usage, latency_s=result.latency_s)


@dataclass(frozen=True)
class Rewrite:
    """A standalone rewrite, or a question to ask when a reference has two readings."""

    standalone: str | None
    ask: Ask | None = None
    guard: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def rewrite_standalone(
    provider: Provider, message: str, history: Sequence[str], *, catalog: Catalog | None = None, timeout_s: float = 2.0
) -> Called[Rewrite]:
    """The message as a standalone question (checked by the rewrite guard), or a clarify outcome."""
    out, result, version = call_structured(
        provider, "rewrite", RewriteOutput, RewriteOutput.json_schema(),
        key=conversation_key(message, history), content=user_content(message, history), timeout_s=timeout_s,
    )  # fmt: skip
    if out.standalone is None:
        if out.clarifying_question:
            return Called(Rewrite(None, Ask(question=out.clarifying_question, options=list(out.options or []))), result, version)
        raise _violation(result, "neither a standalone question nor a clarifying question")
    guard = check_rewrite(message, out.standalone, history, catalog=catalog)
    if not guard.ok:
        raise _rejected(result, f"rewrite {out.standalone!r} rejected: lost {list(guard.lost)}, invented {list(guard.invented)}")
    return Called(Rewrite(out.standalone, None, "kept every term, invented none"), result, version)


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
    )  # fmt: skip
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
    return Called(kept[:n], result, version, tuple(dropped))


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


def route_unsure(
    provider: Provider, message: str, routes: Sequence[RouteSpec], *, candidates: Sequence[str] = (), timeout_s: float = 2.0
) -> Called[str]:
    """The unsure-router tier: one of the configured routes, chosen by their descriptions."""
    names = [r.name for r in routes]
    listing = "\n".join(f"- {r.name}: {r.description or '(no description)'}" for r in routes)
    extra = f"Routes:\n{listing}" + (f"\nThe classifier hesitated between: {', '.join(candidates)}" if candidates else "")
    out, result, version = call_structured(
        provider, "route", RouteOutput, RouteOutput.json_schema(names), key=message, content=user_content(message, extra=extra), timeout_s=timeout_s
    )
    if out.route not in names:
        raise _violation(result, f"route {out.route!r} is not one of {names}")
    return Called(out.route, result, version)


@dataclass(frozen=True)
class ExtractedFilters:
    semantic_query: str | None
    where: Where
    dropped: tuple[Dropped, ...]


def extract_filters_llm(
    provider: Provider,
    message: str,
    schema: FilterSettings,
    *,
    catalog: Catalog | None,
    access: AccessSettings | None,
    timeout_s: float = 2.0,
) -> Called[ExtractedFilters]:
    """Filters read by the model, then validated in code: unknown fields, values the catalog
    does not have and access fields (market, tenant...) are dropped with a reason."""
    fschema = filters_schema(schema, catalog)
    out, result, version = call_structured(
        provider, "filters", FiltersOutput, FiltersOutput.json_schema(fschema), key=message, content=user_content(message), timeout_s=timeout_s
    )
    where, dropped = validate_filters(clean_filters(out.filters), schema, catalog=catalog, access=access)
    semantic = out.semantic_query.strip() if out.semantic_query and out.semantic_query.strip() else None
    if semantic is not None and (invented := _invented(semantic, message, catalog)):
        raise _rejected(result, f"semantic query {semantic!r} invents {list(invented)}")
    return Called(ExtractedFilters(semantic, where, tuple(dropped)), result, version, tuple(f"{d.field}={d.value!r}: {d.reason}" for d in dropped))


def generate_probe(provider: Provider, passage: str, *, timeout_s: float = 5.0) -> str:
    """A question the passage answers, in the passage's own vocabulary (checked here: a question
    that uses a content word the passage lacks raises `LLMError("guard_rejected")`).

    Plugs into triage as `write_probe=lambda text: generate_probe(provider, text)`.
    """
    out, result, _ = call_structured(
        provider, "probe", QuestionOutput, QuestionOutput.json_schema(), key=passage, content=f"Passage:\n{passage}", timeout_s=timeout_s
    )
    q = out.question.strip()
    if not q:
        raise _violation(result, "empty question")
    if outside := vocabulary_violations(q, passage):
        raise _rejected(result, f"probe {q!r} uses words not in the passage: {outside}")
    return q
