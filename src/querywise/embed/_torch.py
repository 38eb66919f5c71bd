"""all-MiniLM-L6-v2 in PyTorch fp32 through sentence-transformers: the reference numerics."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._base import MODEL_NAME, ProgressCallback, Vectors, embed_in_batches, model_dir, token_counter

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["TORCH_EXTRA", "SentenceTransformerEmbedder", "load_sentence_transformer", "quiet_transformers", "torch_extra"]

TORCH_EXTRA = 'pip install "querywise[torch]"'
_TORCH_STACK = frozenset({"torch", "sentence_transformers", "transformers"})


@contextlib.contextmanager
def torch_extra(what: str) -> Iterator[None]:
    """Turn a missing PyTorch stack, inside the block, into the exact install to run.

    PyTorch is an optional extra (the default embedder is ONNX Runtime): `what` names the
    feature that needs it, as in "the torch embedder needs torch: pip install "querywise[torch]"".
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _TORCH_STACK:
            raise
        raise ModuleNotFoundError(f"{what} needs {exc.name}: {TORCH_EXTRA}", name=exc.name) from exc


def load_sentence_transformer(folder: Path | None = None) -> SentenceTransformer:
    """Load the packaged model on the CPU, offline, without printing a progress bar."""
    # Offline before the first import: sentence-transformers and huggingface_hub read it then.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with torch_extra("the torch embedder"):
        from sentence_transformers import SentenceTransformer

    with quiet_transformers():
        return SentenceTransformer(str(folder or model_dir()), device="cpu")


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Hide the "Loading weights" bar transformers draws on stderr: a library must not print."""
    from transformers.utils import logging as hf_logging

    bars_were_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars_were_on:
            hf_logging.enable_progress_bar()


class SentenceTransformerEmbedder:
    """The packaged all-MiniLM-L6-v2, PyTorch fp32 on the CPU (Transformer → mean pooling → L2).

    >>> embedder = SentenceTransformerEmbedder(batch_size=64)
    >>> embedder.embed(["Where is my parcel?"]).shape
    (1, 384)
    """

    model_id = f"{MODEL_NAME}/torch-fp32"

    def __init__(self, *, batch_size: int = 64, model_folder: Path | None = None) -> None:
        self.batch_size = batch_size
        self._model: Any = load_sentence_transformer(model_folder)
        # sentence-transformers 6 renamed the method and warns on the old name; 3-5 have only it.
        dimension = getattr(self._model, "get_embedding_dimension", None)
        if dimension is None:
            dimension = self._model.get_sentence_embedding_dimension
        size = dimension()
        if not isinstance(size, int):
            raise RuntimeError(f"the model reports no embedding dimension ({size!r})")
        self.dim = size
        window = self._model.max_seq_length  # None when the model sets no limit
        self.window: int | None = int(window) if window is not None else None
        self._count = token_counter(model_folder or model_dir())

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in tokens before truncation at ``window`` (the model's max_seq_length)."""
        return self._count(texts)

    def embed(
        self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None
    ) -> Vectors:
        """Embed ``texts``; rows are unit length and in input order."""

        def run_batch(positions: np.ndarray) -> Vectors:
            batch = [texts[i] for i in positions]
            # One call per batch so progress can be reported; the Normalize module of the
            # packaged pipeline already makes rows unit length.
            vectors = self._model.encode(
                batch, batch_size=len(batch), show_progress_bar=False, convert_to_numpy=True
            )
            return np.asarray(vectors, dtype=np.float32)

        # sentence-transformers itself sorts by character length; same batches, same numbers.
        return embed_in_batches(
            [len(t) for t in texts], self.batch_size, self.dim, run_batch, on_progress
        )
