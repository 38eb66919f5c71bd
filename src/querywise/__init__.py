"""querywise: the query-side layer of a RAG or search system, and the instrument that
diagnoses its retrieval failures.

    >>> import querywise as qw
    >>> index = qw.build_index(qw.load_corpus("docs/"), "my-index")   # doctest: +SKIP
    >>> index.search("warranty on the X3", mode="hybrid", k=5)          # doctest: +SKIP

Importing this package is cheap: torch, ONNX Runtime and the vector engine load on first use.
"""

from querywise.chunking import Chunker
from querywise.conditions import AnyOf, Match, Range, Where, WhereSyntaxError, parse_where
from querywise.config import ChunkingSettings, ConfigError, EmbeddingSettings, IndexSettings, Settings, load_settings
from querywise.corpus import Chunk, CorpusError, load_corpus
from querywise.index import Hit, Index, IndexStoreError, Manifest, build_index, rrf
from querywise.triage import TriageReport, load_failures, triage_cases

__version__ = "0.1.0"

__all__ = [
    "AnyOf",
    "Chunk",
    "Chunker",
    "ChunkingSettings",
    "ConfigError",
    "CorpusError",
    "EmbeddingSettings",
    "Hit",
    "Index",
    "IndexStoreError",
    "IndexSettings",
    "Manifest",
    "Match",
    "Range",
    "Settings",
    "TriageReport",
    "Where",
    "WhereSyntaxError",
    "build_index",
    "load_corpus",
    "load_failures",
    "load_settings",
    "parse_where",
    "rrf",
    "triage_cases",
]
