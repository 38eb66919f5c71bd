"""The public surface is deliberate: changing it must change this list."""

import subprocess
import sys

import querywise


def test_exported_members() -> None:
    assert querywise.__all__ == sorted(querywise.__all__)
    assert set(querywise.__all__) == {
        "AnyOf", "Chunk", "Chunker", "ChunkingSettings", "ConfigError", "CorpusError", "EmbeddingSettings",
        "Hit", "Index", "IndexStoreError", "IndexSettings", "Manifest", "Match", "Range", "Settings", "Where",
        "WhereSyntaxError", "build_index", "load_corpus", "load_settings", "parse_where", "rrf",
        "TriageReport", "load_failures", "triage_cases",
    }
    for name in querywise.__all__:
        assert getattr(querywise, name) is not None


def test_import_is_light() -> None:
    """`import querywise` must not pull torch, ONNX Runtime or the vector engine."""
    code = "import sys, querywise; print(sorted(m for m in ('torch', 'onnxruntime', 'qdrant_edge', 'sentence_transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
