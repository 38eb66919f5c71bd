"""Reranking the fused top N of a plan's results: the repair path of triage's *ranking* bucket.

A `Reranker` reorders the first `top_n` hits for the message (the rest keep their places after
them). Two kinds, both off by default (`[rerank] kind = "none"`):

- `CrossEncoderReranker` runs a sentence-transformers `CrossEncoder` loaded from a folder the
  user gives (`[rerank] model`; no weights are shipped or downloaded: the folder is read
  offline). Tens of milliseconds per candidate on a CPU (bench/results/rerank.md).
- the configured LLM as a listwise reranker (`kind = "llm"`, `understand.llm_rerank`), through
  the LLM tier: within the message's deadline, counted in the budget, fail-open.

A reranker only reorders the candidates it is given, which have already passed the plan's
filters and the session's access: whatever it answers, it cannot widen access.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from querywise.clock import ms_since
from querywise.config import RerankSettings
from querywise.embed import torch_extra
from querywise.index import Hit
from querywise.plan import TraceStep

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ["CrossEncoderReranker", "Reordering", "Reranker", "open_reranker", "rerank", "rerank_text"]


@dataclass(frozen=True)
class Reordering:
    """A reranker's answer: a score per candidate (higher is more relevant), or None when it
    gave no order (gated off, or failed: the fused order stands); `step` is its own account
    (an LLM call's tokens and cost, a skip or a fallback), which the `rerank` step builds on."""

    scores: list[float] | None
    step: TraceStep | None = None


@runtime_checkable
class Reranker(Protocol):
    """Scores a message's candidates. `route` is the plan's (an LLM reranker's deadline is the route's)."""

    name: str

    def reorder(self, message: str, candidates: Sequence[Hit], *, route: str | None = None) -> Reordering: ...


def rerank_text(hit: Hit) -> str:
    """What a reranker reads of a candidate: its title, then its text."""
    return " ".join(p for p in (hit.title, hit.text) if p)


class CrossEncoderReranker:
    def __init__(self, folder: Path, *, batch_size: int = 32, max_length: int = 512) -> None:
        if not (folder / "config.json").is_file():
            raise ValueError(f"[rerank] model: {folder} is not a model folder (no config.json); give the folder of a "
                             "sentence-transformers cross-encoder, saved with CrossEncoder.save()")
        self.folder, self.batch_size, self.max_length = folder, batch_size, max_length
        self.name = f"cross-encoder {folder.name}"
        self._model: CrossEncoder | None = None

    def _load(self) -> CrossEncoder:
        if self._model is None:
            import os

            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: never the network
            with torch_extra("the cross-encoder reranker"):
                from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(str(self.folder), device="cpu", max_length=self.max_length, local_files_only=True)
        return self._model

    def scores(self, message: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        predicted = self._load().predict([(message, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in predicted]

    def reorder(self, message: str, candidates: Sequence[Hit], *, route: str | None = None) -> Reordering:
        return Reordering(self.scores(message, [rerank_text(h) for h in candidates]))


def open_reranker(settings: RerankSettings) -> Reranker | None:
    """The `[rerank]` cross-encoder (None for "none"; the LLM reranker needs the deployment's LLM
    tier, so `QueryWise` builds it)."""
    if settings.kind == "cross_encoder":
        assert settings.model is not None  # RerankSettings checks it
        return CrossEncoderReranker(settings.model, batch_size=settings.batch_size)
    return None


def rerank(reranker: Reranker, message: str, hits: Sequence[Hit], top_n: int, *, route: str | None = None) -> tuple[list[Hit], TraceStep]:
    """`hits` with the first `top_n` in the reranker's order (its scores), the rest after them,
    ranks from 1; and the `rerank` step (the fused order unchanged when the reranker gave none)."""
    started = time.perf_counter()
    head, tail = list(hits[:top_n]), list(hits[top_n:])
    answer = reranker.reorder(message, head, route=route)
    details = {"model": reranker.name, "top_n": top_n, "candidates": len(head)}
    latency_ms = ms_since(started)
    if answer.scores is None:
        own = answer.step or TraceStep(move="rerank", status="skipped", reason=f"{reranker.name} gave no order")
        step = own.model_copy(update={"move": "rerank", "reason": f"{own.reason}: the fused order stands",
                                      "details": {**own.details, **details}, "latency_ms": own.latency_ms or latency_ms})
        return list(hits), step
    scores = answer.scores
    if len(scores) != len(head):
        raise ValueError(f"{reranker.name} scored {len(scores)} of {len(head)} candidates")
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    ranked = [head[i].model_copy(update={"score": scores[i]}) for i in order] + tail
    moved = sum(1 for r, i in enumerate(order) if r != i)
    reason = f"{reranker.name} reordered the fused top {len(head)} ({moved} moved)"
    base = answer.step or TraceStep(move="rerank", status="ran", reason=reason)
    step = base.model_copy(update={"move": "rerank", "status": "ran", "reason": reason if answer.step is None else f"{base.reason}; {reason}",
                                   "details": {**base.details, **details, "moved": moved}, "latency_ms": latency_ms})
    return [h.model_copy(update={"rank": r}) for r, h in enumerate(ranked, start=1)], step
