"""Acceptance checks against ../shared (reference figures and public data sets).

Skipped with one line when ../shared is absent. The product's own tests never read it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REFERENCE = SHARED / "reference" / "helpcentre.json"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not SHARED.exists():
        skip = pytest.mark.skip(reason=f"acceptance data not found at {SHARED}")
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def reference() -> dict[str, Any]:
    if not REFERENCE.exists():
        pytest.skip(f"{REFERENCE} not found")
    return json.loads(REFERENCE.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The default embedding path, with the on-disk cache: what users get."""
    from querywise.config import Settings
    from querywise.embed import embedder_for

    return embedder_for(Settings())


@pytest.fixture(scope="session")
def reference_index(reference: dict[str, Any], embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The 15 reference chunks in a real index (default embedder, embedded engine)."""
    from querywise.corpus import Chunk
    from querywise.index import build_index

    chunks = [Chunk(id=k, text=v) for k, v in reference["chunks"].items()]
    ix = build_index(chunks, tmp_path_factory.mktemp("ref") / "ix", embedder=embedder)
    yield ix
    ix.close()


@pytest.fixture(scope="session")
def reference_catalog(reference: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reference catalog as a deployment's catalog file (ids as strings)."""
    path = tmp_path_factory.mktemp("catalog") / "catalog.jsonl"
    path.write_text("".join(json.dumps({**e, "id": str(e["id"])}) + "\n" for e in reference["catalog"]), encoding="utf-8")
    return path
