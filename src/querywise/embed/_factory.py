"""Choosing an embedder by a short name."""

from __future__ import annotations

from pathlib import Path
from typing import Final, Literal, cast, get_args

from querywise.config import Settings

from ._base import Embedder

__all__ = ["DEFAULT_KIND", "EMBEDDER_KINDS", "EmbedderKind", "embedder_for", "load_embedder"]

EmbedderKind = Literal["torch", "onnx", "onnx-int8"]
EMBEDDER_KINDS: Final[tuple[str, ...]] = get_args(EmbedderKind)

#: ONNX Runtime fp32 reproduces every reference figure of the help-centre world that torch does
#: (tests/accept/test_embeddings_reference.py; scores within 5e-7 of torch) and is the faster CPU
#: path (bench/results/embed_throughput.json). "onnx-int8" (the fp32 export quantized per
#: channel, its activations' outlier channels split off into fp32 at the feed-forward outputs and
#: divided into the weights elsewhere, "split"; made locally, each text embedded alone) is faster
#: and nearer fp32 than "smoothed" before it (bench/results/int8-split.md, -collections.md).
#: "smoothed" lost 0.0015 of the default
#: deployment's nDCG@10 on SciFact and on doc2dial, gained 0.0027 on the demo, lost
#: 0.0055 on Medline (30 queries, paired SE 0.0052; bench/results/int8-smoothed.md); plain
#: per channel lost more on each (int8.md), keeping the first feed-forward outputs in fp32
#: ("mixed") did not hold either (int8-rank.md).
#: Its vectors are not fp32's, so an index is searched only with the
#: variant (and recipe: `int8_key`) that built it.
DEFAULT_KIND: Final[EmbedderKind] = "onnx"


def load_embedder(
    kind: EmbedderKind = DEFAULT_KIND,
    *,
    cache_dir: Path | None,
    batch_size: int = 64,
    model_folder: Path | None = None,
    bulk: bool = False,
) -> Embedder:
    """Build the embedder named ``kind``.

    With ``cache_dir``, vectors are cached there (see :class:`CachedEmbedder`) and the ONNX
    export is kept under ``cache_dir / "models"``; with None nothing is written to disk and
    "onnx" re-exports the model in memory (a few seconds) on each call. ``model_folder`` is an
    encoder fine-tuned by `querywise.embed.finetune`, served by torch for "torch" and by its own
    ONNX export otherwise (quantized for "onnx-int8"); its vectors are cached under its own id.
    ``bulk``: the embedder only embeds large batches (a build), so ONNX Runtime's idle threads
    sleep instead of spinning. ``batch_size`` does not apply to "onnx-int8", which embeds each
    text alone (`OnnxEmbedder.int8`).

    >>> embedder = load_embedder("onnx", cache_dir=Path(".cache/querywise"))
    """
    from ._cache import CachedEmbedder

    # Spinning threads burn the CPU they wait on: on SciFact abstracts, 2 threads on a shared
    # machine (load 20-27 on 2 cores) did 63.5 useful GFLOP per CPU-second spinning and 96.1
    # sleeping (one thread: 104.5), and embedded 38% more a wall second (bench/results/
    # embed_efficiency.md). A build's batches are large, so a
    # sleeping thread's wake-up is nothing beside them; the query path keeps ONNX Runtime's
    # default spin while its call runs, where a short query's many small operators each wake the
    # threads (either way they stop when the call returns: `OnnxEmbedder`).
    spinning = not bulk
    inner: Embedder
    if model_folder is not None:
        from ._torch import SentenceTransformerEmbedder
        from .finetune import read_manifest

        model_id = read_manifest(model_folder).model_id  # fails fast on a folder that is not one
        if kind == "torch":
            inner = SentenceTransformerEmbedder(batch_size=batch_size, model_folder=model_folder)
            inner.model_id = f"{model_id}/torch-fp32"
        elif kind == "onnx-int8":
            from ._onnx import OnnxEmbedder

            export_dir = cache_dir / "models" if cache_dir is not None else None
            inner = OnnxEmbedder.int8(export_dir=export_dir, model_folder=model_folder, base_id=model_id, spinning=spinning)
        else:
            from ._onnx import OnnxEmbedder

            export_dir = cache_dir / "models" if cache_dir is not None else None
            inner = OnnxEmbedder.fp32(export_dir=export_dir, batch_size=batch_size, model_folder=model_folder, model_id=f"{model_id}/onnx-fp32", spinning=spinning)
    elif kind == "torch":
        from ._torch import SentenceTransformerEmbedder

        inner = SentenceTransformerEmbedder(batch_size=batch_size)
    elif kind == "onnx":
        from ._onnx import OnnxEmbedder

        export_dir = cache_dir / "models" if cache_dir is not None else None
        inner = OnnxEmbedder.fp32(export_dir=export_dir, batch_size=batch_size, spinning=spinning)
    elif kind == "onnx-int8":
        from ._onnx import OnnxEmbedder

        export_dir = cache_dir / "models" if cache_dir is not None else None
        inner = OnnxEmbedder.int8(export_dir=export_dir, spinning=spinning)
    else:
        known = ", ".join(repr(k) for k in EMBEDDER_KINDS)
        raise ValueError(f"unknown embedder kind {kind!r}; expected one of {known}")
    return CachedEmbedder(inner, cache_dir) if cache_dir is not None else inner


def embedder_for(settings: Settings, *, model_folder: Path | None = None, bulk: bool = False) -> Embedder:
    """The embedder `[embedding]` asks for ("auto" is `DEFAULT_KIND`), with the on-disk cache
    unless it is turned off; `model_folder` is a fine-tuned encoder (the router's `routing.encoder`);
    `bulk`: for a build only (see `load_embedder`)."""
    kind = DEFAULT_KIND if settings.embedding.kind == "auto" else settings.embedding.kind
    if kind not in EMBEDDER_KINDS:
        raise ValueError(f"embedding.kind {kind!r}: expected auto or one of {', '.join(EMBEDDER_KINDS)}")
    return load_embedder(
        cast(EmbedderKind, kind),  # checked just above
        cache_dir=settings.cache_dir / "embeddings" if settings.embedding.cache else None,
        batch_size=settings.embedding.batch_size,
        model_folder=model_folder,
        bulk=bulk,
    )
