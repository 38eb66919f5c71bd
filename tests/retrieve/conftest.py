"""The shop index, and an HTTP endpoint on 127.0.0.1 serving it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_endpoint import Endpoint

from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.index import Index, build_index


@pytest.fixture
def index(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Iterator[Index]:
    ix = build_index(shop, tmp_path / "ix", settings=Settings(cache_dir=tmp_path / "c"), embedder=hash_embedder)
    yield ix
    ix.close()


@pytest.fixture
def endpoint(index: Index) -> Iterator[Endpoint]:
    e = Endpoint(index)
    yield e
    e.server.shutdown()
    e.server.server_close()
