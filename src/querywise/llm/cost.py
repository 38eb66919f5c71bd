"""The cost model of the LLM tier: what each call adds in latency and money.

A call adds its time to first token plus its output tokens at the decoding rate (the input is
read within the TTFT); it costs its input and output tokens at the price table's rates. A
chain of calls adds up; gating sends only a share of requests to the LLM, which lowers the
mean but not the tail: once more than 5% of requests take the slow path, p95 carries it all.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from querywise.config import Price

__all__ = ["CostAssumptions", "CostModel", "GatedCost", "PathCost", "call_latency_s", "cost_model", "rerank_tokens"]


class CostAssumptions(BaseModel):
    usd_per_m_in: float
    usd_per_m_out: float
    ttft_s: float
    tokens_per_s: float


class PathCost(BaseModel):
    calls: list[tuple[int, int]]  # (input tokens, output tokens) of each call, in order
    added_s: float
    usd_per_1000: float


class GatedCost(BaseModel):
    share: float  # of requests that call the LLM
    added_s_mean: float
    added_s_p95: float
    usd_per_1000: float
    p95_note: str


class CostModel(BaseModel):
    assumptions: CostAssumptions
    chain: PathCost
    one_call: PathCost
    gated: GatedCost
    rerank: PathCost | None = None  # the listwise LLM reranker's one call per searched request
    rerank_top_n: int | None = None


def rerank_tokens(top_n: int, passage_tokens: int) -> tuple[int, int]:
    """(input, output) tokens of one listwise rerank call: the instructions and the message
    (~110 tokens), each candidate with its number; out, the numbers of the JSON list (~3 each).

    >>> rerank_tokens(20, 150)
    (3170, 66)
    """
    return 110 + top_n * (passage_tokens + 3), 6 + 3 * top_n


def call_latency_s(output_tokens: int, *, ttft_s: float, tokens_per_s: float) -> float:
    """Seconds one call adds: time to first token, then the output at the decoding rate."""
    return ttft_s + output_tokens / tokens_per_s


def _path(calls: Sequence[tuple[int, int]], a: CostAssumptions) -> PathCost:
    seconds = sum(call_latency_s(out, ttft_s=a.ttft_s, tokens_per_s=a.tokens_per_s) for _, out in calls)
    usd = sum(i * a.usd_per_m_in / 1e6 + o * a.usd_per_m_out / 1e6 for i, o in calls)
    return PathCost(calls=list(calls), added_s=round(seconds, 2), usd_per_1000=round(usd * 1000, 2))


def cost_model(
    *,
    price: Price,
    ttft_s: float,
    tokens_per_s: float,
    chain: Sequence[tuple[int, int]] = ((500, 40), (500, 40), (500, 40)),
    one_call: tuple[int, int] = (600, 80),
    gated_share: float = 0.3,
    tail: float = 0.95,
    rerank: tuple[int, int] | None = None,
    rerank_top_n: int | None = None,
) -> CostModel:
    """A chain of separate calls against one structured call, and that call gated to a share;
    with `rerank` (its call's tokens, `rerank_tokens`), the LLM reranker's call, which comes
    after retrieval, on every searched request.

    >>> m = cost_model(price=Price(usd_per_m_in=1, usd_per_m_out=5), ttft_s=0.4, tokens_per_s=120)
    >>> m.chain.added_s, m.chain.usd_per_1000, m.one_call.added_s, m.one_call.usd_per_1000
    (2.2, 2.1, 1.07, 1.0)
    >>> m.gated.added_s_mean, m.gated.usd_per_1000, m.gated.added_s_p95
    (0.32, 0.3, 1.07)
    """
    a = CostAssumptions(usd_per_m_in=price.usd_per_m_in, usd_per_m_out=price.usd_per_m_out, ttft_s=ttft_s, tokens_per_s=tokens_per_s)
    one = _path([one_call], a)
    exact_s = call_latency_s(one_call[1], ttft_s=ttft_s, tokens_per_s=tokens_per_s)
    exact_usd = one_call[0] * a.usd_per_m_in / 1e6 + one_call[1] * a.usd_per_m_out / 1e6
    slow_in_tail = gated_share > 1 - tail
    pct = round((1 - tail) * 100)
    note = (
        f"more than {pct}% of requests take the slow path, so p{round(tail * 100)} still carries the full {exact_s:.2f} s"
        if slow_in_tail
        else f"at most {pct}% of requests take the slow path, so p{round(tail * 100)} adds nothing"
    )
    gated = GatedCost(
        share=gated_share,
        added_s_mean=round(gated_share * exact_s, 2),
        added_s_p95=round(exact_s if slow_in_tail else 0.0, 2),
        usd_per_1000=round(gated_share * exact_usd * 1000, 2),
        p95_note=note,
    )
    return CostModel(assumptions=a, chain=_path(chain, a), one_call=one, gated=gated,
                     rerank=_path([rerank], a) if rerank is not None else None, rerank_top_n=rerank_top_n)
