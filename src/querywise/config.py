"""One settings object, passed down explicitly. Loaded from TOML by deployments (later
sections add routes, filters and thresholds); every field has an embedded default so the
demo and a first `querywise index` need no file at all."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ConfigError", "load_settings", "ChunkingSettings", "EmbeddingSettings", "IndexSettings", "Settings", "default_cache_dir"]


def default_cache_dir() -> Path:
    """`$QUERYWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/querywise`, else `~/.cache/querywise`."""
    if env := os.environ.get("QUERYWISE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "querywise"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EmbeddingSettings(_Section):
    kind: str = "auto"  # "auto" picks the fastest path that keeps the reference numbers
    batch_size: int = Field(64, ge=1)
    cache: bool = True  # on-disk cache keyed by model and text hash


class ChunkingSettings(_Section):
    max_chars: int = Field(1000, ge=50)
    overlap: int = Field(0, ge=0)
    identifier_pattern: str = r"\b[A-Z]{2,}-\d{3,}\b"


class IndexSettings(_Section):
    engine: Literal["edge", "server"] = "edge"
    server_url: str | None = None  # for engine = "server"; the API key comes from QDRANT_API_KEY
    collection: str = "querywise"
    # BM25 (Lucene form) over Qdrant sparse vectors with the IDF modifier.
    k1: float = Field(1.5, gt=0)
    b: float = Field(0.75, ge=0, le=1)
    # HNSW: see bench/results for the recall@10 against exact search these settings keep.
    hnsw_m: int = Field(16, ge=4)
    hnsw_ef_construct: int = Field(100, ge=8)
    hnsw_ef: int = Field(128, ge=8)
    rrf_k: int = Field(60, ge=1)  # ranks counted from 1, as in Cormack et al.
    depth: int = Field(100, ge=1)  # how deep each list goes into hybrid fusion
    # Payload fields to index for fast filtering; None = every short scalar field.
    payload_indexes: list[str] | None = None


class Settings(_Section):
    """Everything configurable, with embedded defaults."""

    cache_dir: Path = Field(default_factory=default_cache_dir)
    embedding: EmbeddingSettings = EmbeddingSettings()
    chunking: ChunkingSettings = ChunkingSettings()
    index: IndexSettings = IndexSettings()


class ConfigError(ValueError):
    """A settings file that cannot be read or does not validate; the message says where."""


def load_settings(path: Path | str | None) -> Settings:
    """Settings from a TOML file (sections `[embedding]`, `[chunking]`, `[index]`), or the
    embedded defaults when `path` is None.

    >>> load_settings(None).index.rrf_k
    60
    """
    if path is None:
        return Settings()
    import tomllib

    from pydantic import ValidationError

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    known = set(Settings.model_fields)
    try:
        return Settings.model_validate({k: v for k, v in data.items() if k in known})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{p}: {problems}") from None
