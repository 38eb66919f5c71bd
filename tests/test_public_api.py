"""The public surface is deliberate: changing it must change this file, and the docs may only
tell users to call what is exported."""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import querywise

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FILE_SUFFIXES = {"toml", "json", "jsonl", "md", "html", "log"}


def test_exported_members() -> None:
    """Every public name bound in `querywise/__init__.py` is in `__all__`, sorted (as httpx pins it)."""
    bound = sorted(name for name in vars(querywise) if not name.startswith("_") and not _is_submodule(name))
    assert querywise.__all__ == bound
    assert set(querywise.__all__) == {
        "Answer", "AnyOf", "Ask", "Assume", "Case", "Chunk", "Chunker", "ChunkingSettings", "Client", "ConfigError", "CorpusError",
        "Cover", "EmbeddingSettings", "EvalReport", "EvalResult", "FailureRow", "FunctionRetriever", "HTTPRetriever", "Hit", "Index",
        "IndexRetriever", "IndexSettings", "IndexStoreError", "Reordering", "Reranker", "Retriever", "RetrieverError",
        "InputError", "LLMError", "LeftAsk", "Manifest", "Match", "NoneOf", "PlanQuery", "PlanResult", "Provider", "QueryPlan", "QueryWise", "Readings", "RouteLookup",
        "Range", "ScriptedProvider", "ServiceError", "Settings", "TraceStep", "TriageOptions", "TriageReport", "TriageTarget", "Turn", "Understander", "Where", "WhereSyntaxError",
        "build_index", "build_report", "compare_runs", "evaluate", "execute", "load_beir", "load_cases", "load_corpus",
        "load_failures", "load_labels", "load_run", "load_settings", "load_sources", "parse_metrics", "parse_where",
        "plan_json_schema", "population_of", "rrf", "sample_failures", "triage",
    }


def _is_submodule(name: str) -> bool:
    return type(vars(querywise)[name]).__name__ == "module"


def test_docs_use_only_exported_names() -> None:
    """`qw.name`, `querywise.name` and `from querywise[.sub] import name` in the README and docs
    name something the module exports."""
    missing = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for name in re.findall(r"\b(?:qw|querywise)\.([A-Za-z_]\w*)\b(?!\.)", text):
            if name in FILE_SUFFIXES:  # querywise.toml: a file name, not an attribute
                continue
            if name not in querywise.__all__ and not _module_exists(f"querywise.{name}"):
                missing.append(f"{doc.name}: querywise.{name}")
        for module, names in re.findall(r"from (querywise(?:\.\w+)*) import ([\w, ]+)", text):
            exported = getattr(importlib.import_module(module), "__all__", [])
            missing += [f"{doc.name}: {module}.{n}" for n in (n.strip() for n in names.split(",")) if n and n not in exported]
    assert missing == []


def _module_exists(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def test_import_is_light() -> None:
    """`import querywise` must not pull torch, ONNX Runtime, the vector engine or an LLM SDK."""
    heavy = ("torch", "onnxruntime", "qdrant_edge", "qdrant_client", "sentence_transformers", "anthropic", "openai")
    code = f"import sys, querywise; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
