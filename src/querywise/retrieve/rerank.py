"""Reranking the fused top N of a plan's results: the repair path of triage's *ranking* bucket.

A `Reranker` reorders the first `top_n` hits for the message (the rest keep their places after
them). `CrossEncoderReranker` runs a sentence-transformers `CrossEncoder` loaded from a folder the
user gives (`[rerank] model`; no weights are shipped or downloaded: the folder is read offline).
Off by default (`[rerank] kind = "none"`): a cross-encoder costs tens of milliseconds per
candidate on a CPU, measured per candidate count in bench/results/rerank.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from querywise.config import RerankSettings
from querywise.index import Hit

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

__all__ = ["CrossEncoderReranker", "Reranker", "open_reranker", "rerank"]


@runtime_checkable
class Reranker(Protocol):
    """Scores (message, passage) pairs; higher is more relevant."""

    name: str

    def scores(self, message: str, texts: Sequence[str]) -> list[float]: ...


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
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(str(self.folder), device="cpu", max_length=self.max_length, local_files_only=True)
        return self._model

    def scores(self, message: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        predicted = self._load().predict([(message, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in predicted]


def open_reranker(settings: RerankSettings) -> Reranker | None:
    if settings.kind == "cross_encoder":
        assert settings.model is not None  # RerankSettings checks it
        return CrossEncoderReranker(settings.model, batch_size=settings.batch_size)
    return None


def rerank(reranker: Reranker, message: str, hits: Sequence[Hit], top_n: int) -> list[Hit]:
    """`hits` with the first `top_n` in the reranker's order (its scores), the rest after them, ranks from 1."""
    head, tail = list(hits[:top_n]), list(hits[top_n:])
    scores = reranker.scores(message, [" ".join(p for p in (h.title, h.text) if p) for h in head])
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
    ranked = [head[i].model_copy(update={"score": scores[i]}) for i in order] + tail
    return [h.model_copy(update={"rank": r}) for r, h in enumerate(ranked, start=1)]
