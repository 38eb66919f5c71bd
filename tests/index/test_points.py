"""What a build decides per payload field: which fields get graph links, and how a filtered search walks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querywise.conditions import parse_where
from querywise.config import IndexSettings, Settings
from querywise.config.understanding import AccessSettings, FilterField, FilterSettings
from querywise.corpus import Chunk
from querywise.index import Index, IndexStoreError, build_index
from querywise.index.engine import PayloadKind
from querywise.index.points import graph_fields
from querywise.index.store import _filtered_plan

KINDS: dict[str, PayloadKind] = {"id": "keyword", "category": "keyword", "price": "float", "markets": "keyword", "tenant": "keyword"}


def test_without_declared_filters_every_indexed_field_but_the_id_has_links() -> None:
    assert graph_fields(KINDS, Settings()) == ["category", "price", "markets", "tenant"]


def test_declared_filter_and_access_fields_are_the_linked_ones() -> None:
    settings = Settings(
        filters=FilterSettings(fields={"price": FilterField(type="number"), "colour": FilterField(type="keyword")}, catalog_link="markets"),
        access=AccessSettings(fields={"org": "tenant"}),
    )
    # "colour" is declared but no chunk carries it: nothing to link.
    assert graph_fields(KINDS, settings) == ["price", "markets", "tenant"]
    # A key path is indexed under its top-level key.
    nested = Settings(filters=FilterSettings(fields={"tenant.region": FilterField(type="keyword")}))
    assert graph_fields(KINDS, nested) == ["tenant"]


def test_named_graph_fields_win_and_a_typo_is_refused() -> None:
    assert graph_fields(KINDS, Settings(index=IndexSettings(graph_fields=["price"]))) == ["price"]
    with pytest.raises(IndexStoreError, match=r"'catgory'.*indexed: category, markets, price, tenant"):
        graph_fields(KINDS, Settings(index=IndexSettings(graph_fields=["catgory"])))


@pytest.mark.parametrize("mode", ["acorn", "exact"])
def test_modes_without_links_link_nothing(mode: str) -> None:
    assert graph_fields(KINDS, Settings(index=IndexSettings(filtered_search=mode, graph_fields=["price"]))) == []  # type: ignore[arg-type]


def test_a_filter_walks_the_links_only_when_one_of_its_fields_has_them() -> None:
    linked = frozenset({"category"})
    assert _filtered_plan("graph", linked, parse_where(["category=headphones", "price<200"]), False) == {"exact": False, "acorn": False}
    assert _filtered_plan("graph", linked, parse_where(["price<200"]), False) == {"exact": False, "acorn": True}
    # A path into a linked field is on that field.
    assert _filtered_plan("graph", frozenset({"specs"}), parse_where(["specs.colour=red"]), False)["acorn"] is False
    assert _filtered_plan("acorn", linked, parse_where(["category=headphones"]), False)["acorn"] is True
    assert _filtered_plan("exact", linked, parse_where(["category=headphones"]), False) == {"exact": True}
    assert _filtered_plan("graph", linked, None, False) == {"exact": False}


def test_a_build_links_the_named_fields_records_them_and_finds_the_exact_neighbours(
    tmp_path: Path, shop: list[Chunk], hash_embedder  # type: ignore[no-untyped-def]
) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", index=IndexSettings(graph_fields=["category"]))
    index = build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder)
    assert index.manifest.graph_fields == ["category"]
    (config,) = (index.build / "shard" / "segments").glob("*/payload_index/config.json")
    fields = json.loads(config.read_text())["indexed_fields"]
    assert {f: v["enable_hnsw"] for f, v in fields.items()} == {"id": False, "category": True, "price": False, "markets": False}
    for where in (parse_where(["price<200"]), parse_where(["category=headphones", "price<200"])):
        got = [h.id for h in index.search("warranty", mode="dense", k=3, where=where)]
        assert got == [h.id for h in index.search("warranty", mode="dense", k=3, where=where, exact=True)]
    index.close()
    # An index built before graph_fields was recorded has links on every indexed field.
    path = index.build / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["graph_fields"]
    path.write_text(json.dumps(manifest))
    old = Index.open(tmp_path / "ix", settings=settings, embedder=hash_embedder)
    assert old.manifest.graph_fields is None and old._gen.linked == frozenset(old.manifest.payload_indexes)
    old.close()
