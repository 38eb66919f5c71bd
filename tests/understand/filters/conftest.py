"""Fixtures of the filter extraction tests: the demo shop (Tessel), its schema, catalog and access."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

import querywise.demo
from querywise.catalog import Catalog
from querywise.config import Settings, load_settings
from querywise.understand.filters import FilterExtraction, extract_filters

DEMO = Path(querywise.demo.__file__).parent
TODAY = date(2025, 6, 10)


@pytest.fixture(scope="module")
def demo() -> Settings:
    return load_settings(DEMO / "querywise.toml")


@pytest.fixture(scope="module")
def catalog(demo: Settings) -> Catalog:
    assert demo.deployment.catalog is not None
    return Catalog.load(demo.deployment.catalog)


@pytest.fixture
def extract(demo: Settings, catalog: Catalog) -> Any:
    def run(message: str, *, today: date = TODAY, **kw: Any) -> FilterExtraction:
        kw.setdefault("access", demo.access)
        return extract_filters(message, demo.filters, catalog=catalog, today=today, **kw)

    return run
