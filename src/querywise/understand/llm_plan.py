"""The one structured call for the whole plan: route, standalone query, filters, clarifying
question and assumption, in one round trip (one TTFT instead of one per move).

Only the fields the gate asked for are used. The answer then passes, in code, before anything
reaches the index: the route enum, the rewrite guard (nothing lost, nothing invented), the
filter validator (enums, ranges, units; access fields dropped: access comes from the session),
and an invented-terms check on the assumption and the semantic query. A failed check rejects
the whole answer (`LLMError`), and the pipeline falls back to the deterministic path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from querywise.catalog import Catalog
from querywise.checks.filters import Dropped, validate_filters
from querywise.checks.guard import check_rewrite
from querywise.conditions import Where
from querywise.config import AccessSettings, FilterSettings, RouteSpec
from querywise.conversation import Turn, texts
from querywise.llm.provider import FailureReason, LLMError, Provider
from querywise.llm.schemas import PlanOutput, clean_filters, filters_schema
from querywise.llm.structured import call_structured, conversation_key, user_content
from querywise.plan import Ask, Assume
from querywise.understand.tier import Called

__all__ = ["PlanNeeds", "PlanOutcome", "plan_call"]


@dataclass(frozen=True)
class PlanNeeds:
    """What the gate asks the call for."""

    rewrite: bool = False
    route: bool = False
    filters: bool = False

    def __bool__(self) -> bool:
        return self.rewrite or self.route or self.filters

    def describe(self) -> str:
        return ", ".join(n for n, on in (("standalone rewrite", self.rewrite), ("route", self.route), ("filters", self.filters)) if on)


@dataclass(frozen=True)
class PlanOutcome:
    """The checked answer: only fields that were asked for are set."""

    standalone: str | None = None
    ask: Ask | None = None
    assume: Assume | None = None
    route: str | None = None
    semantic_query: str | None = None
    filters: Where = field(default_factory=Where)
    dropped: tuple[Dropped, ...] = ()
    guard: str = ""


def plan_call(
    provider: Provider,
    message: str,
    history: Sequence[Turn],
    *,
    needs: PlanNeeds,
    routes: Sequence[RouteSpec],
    filter_settings: FilterSettings,
    catalog: Catalog | None,
    access: AccessSettings | None,
    timeout_s: float,
    max_tokens: int = 400,
) -> Called[PlanOutcome]:
    """One call; raises `LLMError` for a failed call or an answer that fails a check."""
    names = [r.name for r in routes] if needs.route else []
    said = texts(history)  # what the rewrite may draw on: the user's turns and the assistant's
    fschema = filters_schema(filter_settings, catalog) if needs.filters and filter_settings.fields else None
    extra = [f"Fields wanted: {needs.describe()}. Set every other field to null."]
    if names:
        extra.append("Routes:\n" + "\n".join(f"- {r.name}: {r.description or '(no description)'}" for r in routes))
    out, result, version = call_structured(
        provider, "plan", PlanOutput, PlanOutput.json_schema(routes=names, filters=fschema),
        key=conversation_key(message, history), content=user_content(message, history, "\n\n".join(extra)),
        timeout_s=timeout_s, max_tokens=max_tokens,
    )

    def reject(reason: FailureReason, why: str) -> LLMError:
        return LLMError(reason, why, usage=result.usage, latency_s=result.latency_s)

    route = None
    if out.route is not None:  # a value outside the enum breaks the schema, asked for or not
        known = [r.name for r in routes]
        if out.route not in known:
            raise reject("schema_violation", f"route {out.route!r} is not one of {known}")
        route = out.route if needs.route else None
    standalone, ask, guard = None, None, ""
    if needs.rewrite:
        if out.standalone is not None and out.standalone.strip():
            g = check_rewrite(message, out.standalone, said, catalog=catalog)
            if not g.ok:
                raise reject("guard_rejected", g.reason if g.too_long else f"rewrite {out.standalone!r} lost {list(g.lost)}, invented {list(g.invented)}")
            standalone, guard = out.standalone.strip(), "kept every term, invented none"
        elif out.clarifying_question:
            ask = Ask(question=out.clarifying_question, options=list(out.options or []))
    assume = None
    if out.assumption and out.assumption.strip() and ask is None:
        g = check_rewrite(message, out.assumption, said, catalog=catalog)
        if g.invented:
            raise reject("guard_rejected", f"assumption: {g.reason}" if g.too_long else f"assumption {out.assumption!r} invents {list(g.invented)}")
        assume = Assume(text=out.assumption.strip())
    where, semantic = Where(), None
    dropped: list[Dropped] = []
    if needs.filters and out.filters:
        where, dropped = validate_filters(clean_filters(out.filters), filter_settings, catalog=catalog, access=access)
        if where and out.semantic_query and out.semantic_query.strip():
            semantic = out.semantic_query.strip()
            g = check_rewrite(message, semantic, said, catalog=catalog)
            if g.invented:
                raise reject("guard_rejected", f"semantic query: {g.reason}" if g.too_long else f"semantic query {semantic!r} invents {list(g.invented)}")
    outcome = PlanOutcome(standalone, ask, assume, route, semantic, where, tuple(dropped), guard)
    return Called(outcome, result, version, dropped=tuple(dropped))
