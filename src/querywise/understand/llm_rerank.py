"""The configured LLM as a listwise reranker (`[rerank] kind = "llm"`).

One structured call sees the message and the numbered candidates (each cut to
`[rerank] passage_chars`) and returns their numbers, most relevant first. It runs through the
LLM tier like every LLM move: within the message's one deadline (what the plan's LLM moves left
of the route's timeout), counted in the budget and the fallback rates, served from the
single-turn cache for the same message and candidates. It is fail-open on every route: when the
call fails, times out or answers out of schema, the fused order stands and the trace says why.

Its answer can only reorder: numbers that name no candidate or repeat one are dropped (and noted),
candidates it leaves out keep their fused order after the ones it ranked. The candidates have
already passed the filters and the session's access, so nothing it says can widen access.
"""

from __future__ import annotations

from collections.abc import Sequence

from querywise.index import Hit
from querywise.llm.provider import LLMError, Provider
from querywise.llm.schemas import RerankOutput
from querywise.llm.structured import call_structured, user_content
from querywise.plan import TraceStep
from querywise.retrieve import Reordering, rerank_text
from querywise.understand.tier import Called, LLMTier

__all__ = ["LLMReranker", "listwise", "rerank_key"]


def rerank_key(message: str, candidates: Sequence[Hit]) -> str:
    """What a listwise answer is keyed by (the cache, a scripted provider): the message, then the
    candidates' ids in their fused order."""
    return message + "\n" + " ".join(h.id for h in candidates)


def listwise(provider: Provider, message: str, candidates: Sequence[Hit], *, passage_chars: int, timeout_s: float, max_tokens: int = 400) -> Called[list[float]]:
    """A score per candidate from one listwise call (n for the first ranked, down to 1, then
    the unranked below them in fused order); `LLMError` when the answer ranks none of them."""
    numbered = "\n".join(f"[{i}] {rerank_text(h)[:passage_chars]}" for i, h in enumerate(candidates, start=1))
    out, result, version = call_structured(
        provider, "rerank", RerankOutput, RerankOutput.json_schema(), key=rerank_key(message, candidates),
        content=user_content(message, extra=f"Passages:\n{numbered}"), timeout_s=timeout_s, max_tokens=max_tokens,
    )
    n = len(candidates)
    ranked: list[int] = []
    notes: list[str] = []
    for number in out.order:
        if not 1 <= number <= n:
            notes.append(f"{number}: no such passage (1..{n})")
        elif number - 1 in ranked:
            notes.append(f"{number}: listed twice")
        else:
            ranked.append(number - 1)
    if not ranked:
        raise LLMError("schema_violation", f"the order names none of the {n} passages", usage=result.usage, latency_s=result.latency_s)
    if len(ranked) < n:
        notes.append(f"{n - len(ranked)} passage(s) not ranked: kept after the ranked ones, in fused order")
    order = ranked + [i for i in range(n) if i not in ranked]
    scores = [0.0] * n
    for position, i in enumerate(order):
        scores[i] = float(n - position)
    return Called(scores, result, version, notes=tuple(notes))


class LLMReranker:
    """The LLM tier's provider as a `Reranker`; never raises (a failure is the fused order)."""

    def __init__(self, tier: LLMTier, *, passage_chars: int = 600) -> None:
        self.tier, self.passage_chars = tier, passage_chars
        self.name = f"LLM listwise {tier.provider.model or tier.provider.name}"

    def reorder(self, message: str, candidates: Sequence[Hit], *, route: str | None = None) -> Reordering:
        if len(candidates) < 2:
            return Reordering(None, TraceStep(move="llm_rerank", status="skipped", reason=f"{len(candidates)} candidate: nothing to order"))
        called, step = self.tier.run(
            "llm_rerank",
            lambda seconds: listwise(self.tier.provider, message, candidates, passage_chars=self.passage_chars, timeout_s=seconds,
                                     max_tokens=self.tier.settings.llm.max_tokens),
            route=route, text=rerank_key(message, candidates), why=f"listwise rerank of {len(candidates)} candidates",
            fails_open=True,  # whatever the route's policy: the fused order is a complete answer
        )
        if called is None:
            return Reordering(None, step)
        return Reordering(called.value, step)
