"""What a bucket's repair costs, where the deployment knows it.

Two repairs have a price the deployment can state: reranking (a ranking failure's repair) costs
the reranker's time over its candidates, measured here on one of the failing questions (a
cross-encoder: the median of three runs over `[rerank] top_n` candidates) or read from the cost
model (an LLM reranker: one listwise call); the query layer's LLM moves (the query-defect
buckets' repair) cost one structured plan call, from the cost model and `[llm]` prices
(`querywise cost` prints the same figures). A repair whose price the deployment cannot state has
none: the report says nothing rather than guess.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from querywise.llm.cost import cost_model, rerank_tokens
from querywise.service import QueryWise
from querywise.triage.buckets import QUERY_BUCKETS

__all__ = ["repair_prices"]

RUNS = 3  # reranker timings per price: the median is stated
CHARS_PER_TOKEN = 4  # the cost model's passage length, from [rerank] passage_chars


def repair_prices(deployment: QueryWise, questions: Sequence[str]) -> dict[str, str]:
    """Bucket -> the price of its repair in this deployment (buckets without one are left out).
    `questions`: failing questions, the first of which the reranker is timed on."""
    settings = deployment.settings
    prices: dict[str, str] = {}
    llm = settings.llm
    price = llm.price_for(llm.model) if llm.provider != "none" else None
    model = cost_model(price=price, ttft_s=llm.ttft_s, tokens_per_s=llm.tokens_per_s) if price is not None else None
    rerank = settings.rerank
    if rerank.kind == "cross_encoder" and deployment.reranker is not None and questions:
        candidates = deployment.search(questions[0], k=rerank.top_n)
        seconds = []
        for _ in range(RUNS):
            started = time.perf_counter()
            deployment.reranker.reorder(questions[0], candidates)
            seconds.append(time.perf_counter() - started)
        prices["ranking"] = (f"the configured reranker over {len(candidates)} candidates: {1000 * statistics.median(seconds):.0f} ms "
                             f"a searched message (measured here, median of {RUNS})")
    elif rerank.kind == "llm" and price is not None:
        tokens = rerank_tokens(rerank.top_n, rerank.passage_chars // CHARS_PER_TOKEN)
        call = cost_model(price=price, ttft_s=llm.ttft_s, tokens_per_s=llm.tokens_per_s, rerank=tokens).rerank
        assert call is not None
        prices["ranking"] = (f"the LLM reranker's call over {rerank.top_n} candidates: +{call.added_s:.2f} s, "
                             f"${call.usd_per_1000:.2f} per 1,000 searched messages (cost model, [llm] prices)")
    if model is not None:
        for bucket in QUERY_BUCKETS:
            prices[bucket] = (f"an LLM plan call ({llm.model}): +{model.one_call.added_s:.2f} s, ${model.one_call.usd_per_1000:.2f} "
                              f"per 1,000 messages that need it (cost model, [llm] prices)")
    return prices
