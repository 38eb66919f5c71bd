"""A plan shows a session only what its access lets it search: corrections, near-miss identifiers,
exact lookups and catalog entries outside it are withheld (the shop: the Pico Buds are US-only, the
QR- cushions EU-only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shop_deployment import shop_settings

from querywise.catalog import Catalog, Entity
from querywise.conditions import Match, Where, describe
from querywise.config import FilterField, FilterSettings, Settings
from querywise.corpus import Chunk
from querywise.index import build_index
from querywise.plan import QueryPlan
from querywise.service import QueryWise
from querywise.understand.pipeline import Understander
from querywise.understand.visible import catalog_view

CATALOG = [
    {"id": "pico-buds", "name": "Pico Buds", "description": "Tiny earbuds with seven hours of play.", "price_usd": 99, "markets": ["us"]},
    {"id": "vela-x3", "name": "Vela X3", "description": "Over-ear headphones with an 18-month warranty.", "price_usd": 179, "markets": ["eu", "us"]},
]


def _settings(tmp_path: Path) -> Settings:
    s = shop_settings(tmp_path)
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text("".join(json.dumps(e) + "\n" for e in CATALOG), encoding="utf-8")
    return s.model_copy(update={
        "deployment": s.deployment.model_copy(update={"catalog": catalog}),
        "filters": FilterSettings(fields={"price_usd": FilterField(type="number", min=0, max=10_000, unit="usd", aliases=["price"])}),
        "understanding": s.understanding.model_copy(update={"moves": [*s.understanding.moves, "exact_lookup"]}),
    })


@pytest.fixture
def qw(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> Iterator[QueryWise]:
    settings = _settings(tmp_path)
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as q:
        yield q


def _plan(qw: QueryWise, message: str, market: str) -> QueryPlan:
    return qw.plan(message, session={"market": market})


def _shows(plan: QueryPlan, *words: str) -> list[str]:
    """Which of `words` the plan a user receives shows anywhere (queries, action, filters, trace)."""
    text = plan.model_dump_json().lower()
    return [w for w in words if w.lower() in text]


def test_a_correction_into_a_word_only_out_of_access_chunks_hold_is_withheld(qw: QueryWise) -> None:
    us = _plan(qw, "pcio buds battery life", "us")
    assert [q.text for q in us.queries if q.kind == "spelling"] == ["pico buds battery life"]
    eu = _plan(qw, "pcio buds battery life", "eu")
    assert [q.kind for q in eu.queries] == ["original"] and _shows(eu, "pico") == []


def test_a_near_miss_identifier_is_offered_only_from_the_session_s_chunks(qw: QueryWise) -> None:
    eu = _plan(qw, "is QR-5127 in stock", "eu")
    assert eu.action.type == "ask" and "QR-5126" in eu.action.options  # type: ignore[union-attr]
    us = _plan(qw, "is QR-5127 in stock", "us")
    assert us.action.type == "answer" and _shows(us, "QR-5126", "QR-5162") == []


def test_an_identifier_outside_the_session_s_access_is_not_looked_up(qw: QueryWise) -> None:
    assert [q.text for q in _plan(qw, "is qr5126 in stock", "eu").queries if q.kind == "exact"] == ["QR-5126"]
    us = _plan(qw, "is qr5126 in stock", "us")
    assert [q.kind for q in us.queries] == ["original"] and _shows(us, "QR-5126") == []


def test_a_catalog_entry_outside_the_session_s_access_is_not_read(qw: QueryWise) -> None:
    us = _plan(qw, "like the Pico Buds but cheaper", "us")
    assert [describe(c).split(" (")[0] for c in us.filters.conditions] == ["price_usd < 99"] and _shows(us, "seven hours")
    eu = _plan(qw, "like the Pico Buds but cheaper", "eu")
    assert not eu.filters and _shows(eu, "seven hours", "< 99", "pico-buds") == []


def test_without_access_constraints_the_whole_deployment_is_seen(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    settings = _settings(tmp_path)
    settings = settings.model_copy(update={"access": settings.access.model_copy(update={"fields": {}})})
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as q:
        plan = q.plan("is QR-5127 in stock")
        assert plan.action.type == "ask" and [q.kind for q in q.plan("pcio buds").queries] == ["original", "spelling"]


def test_a_deployment_that_cannot_ask_its_index_withholds_every_suggestion(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    settings = _settings(tmp_path)
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        blind = Understander(settings, embedder=hash_embedder, lexicon=ix.lexicon)  # no `visible`
        eu = blind.plan("is QR-5127 in stock; pcio buds", session={"market": "eu"})
        assert eu.action.type == "answer" and [q.kind for q in eu.queries] == ["original"]


def test_the_index_says_which_words_an_access_filter_s_chunks_hold(tmp_path: Path, shop: list[Chunk], hash_embedder: Any) -> None:
    with build_index(shop, tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder) as ix:
        eu, us = (Where(conditions=(Match(field="markets", value=m),)) for m in ("eu", "us"))
        assert ix.holds("pico", us) and not ix.holds("pico", eu)
        assert ix.holds("QR-5126", eu) and not ix.holds("QR-5126", us) and not ix.holds("QR-5127", eu)
        assert ix.holds("warranty", eu) and ix.holds("warranty", us) and not ix.holds("xylophone", us)


def test_a_catalog_view_keeps_the_entries_the_access_matches() -> None:
    catalog = Catalog([Entity("a", "A", fields={"markets": ["eu"]}), Entity("b", "B", fields={"markets": ["us"]}), Entity("c", "C")])
    eu = catalog_view(catalog, Where(conditions=(Match(field="markets", value="eu"),)))
    assert [e.id for e in eu.entities] == ["a"]  # an entry without the access field is not shown
    assert catalog_view(catalog, Where()) is catalog


def test_a_word_counts_as_held_only_as_written_not_by_its_stem(tmp_path: Path, hash_embedder: Any) -> None:
    chunks = [Chunk(id="eu", text="Each part ships separate from the order.", payload={"markets": ["eu"]}),
              Chunk(id="us", text="Each part ships separately and insured.", payload={"markets": ["us"]})]
    with build_index(chunks, tmp_path / "ix", settings=_settings(tmp_path), embedder=hash_embedder) as ix:
        eu = Where(conditions=(Match(field="markets", value="eu"),))
        assert ix.holds("separate", eu) and not ix.holds("separately", eu) and not ix.holds("insured", eu)
