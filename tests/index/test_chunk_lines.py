"""A search's hits are read from chunks.jsonl, not from the engine's payloads: the same hits, field
for field, in every mode, with a filter, after live updates (points with gaps), and for payloads of
every JSON kind; a build made before ids.json still searches (from the engine), and a chunks.jsonl
that does not match ids.json is refused on open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from querywise.conditions import Match, Where
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.index import Index, IndexStoreError, build_index
from querywise.index.chunk_lines import ChunkLines
from tests.conftest import HashEmbedder

QUERIES = ["warranty of the vela headphones", "battery hours per charge", "refund within days", "zürich café crème", "nothing matches zzqx"]

ODD = [
    Chunk(id="a", text="Vela headphones carry an 18-month warranty.", title="Warranty",
          payload={"category": "headphones", "price": 179, "ratio": 0.1 + 0.2, "big": 2**62, "neg": -0.0, "ok": True, "none": None,
                   "markets": ["eu", "us"], "specs": {"colour": "black", "sizes": [1, 2.5]}}),
    Chunk(id="b", text="Pico buds play for 7 hours per charge.", payload={"category": "earbuds", "note": "quote \" and \\ and \n newline"}),
    Chunk(id="c", text="Refund within 30 days of delivery.", payload={"category": "policy", "id": "shadowed", "text": "shadowed", "title": "x"}),
    Chunk(id="d", text="Zürich café crème — 😀 non-ASCII text.", title="Ünïcode", payload={"category": "food", "emoji": "😀"}),
    Chunk(id="e", text="The Vela case charges the headphones in 2 hours.", payload={}),
]


def _legacy(ix: Index) -> Index:
    """`ix`'s folder opened again, its hits read from the engine's payloads as before chunk_lines
    (what a build without ids.json does)."""
    old = Index.open(ix.root, settings=ix.settings, embedder=HashEmbedder())
    gen = old._gen
    assert gen.lines is not None
    gen.lines.close()
    gen.lines = None
    return old


def _all_searches(ix: Index) -> list[list[dict[str, object]]]:
    where = Where(conditions=(Match(field="category", value="headphones"),))
    out = [[h.model_dump() for h in ix.search(q, mode=mode, k=10)] for q in QUERIES for mode in ("dense", "bm25", "hybrid")]
    out += [[h.model_dump() for h in ix.search(q, k=3, where=where)] for q in QUERIES]
    return out


def test_hits_from_the_lines_equal_hits_from_the_engine(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache")
    with build_index(ODD, tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as ix, _legacy(ix) as old:
        new_hits = _all_searches(ix)
        assert new_hits == _all_searches(old)
        assert any(h for h in new_hits)
        shadowed = next(h for q in new_hits for h in q if h["id"] == "c")
        assert shadowed["text"] == "Refund within 30 days of delivery." and shadowed["payload"] == {"category": "policy"}
        a = next(h for q in new_hits for h in q if h["id"] == "a")
        assert a["payload"]["specs"] == {"colour": "black", "sizes": [1, 2.5]} and a["payload"]["ratio"] == 0.1 + 0.2
        assert type(a["payload"]["big"]) is int and a["payload"]["none"] is None


def test_hits_after_live_updates_are_the_chunks_they_point_to(tmp_path: Path, shop: list[Chunk]) -> None:
    """An update leaves gaps in the point ids and appends lines: each point still finds its line."""
    settings = Settings(cache_dir=tmp_path / "cache")
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as ix:
        ix.delete([shop[1].id])
        ix.upsert([shop[3].model_copy(update={"text": shop[3].text + " Now also sold as QR-9."}), *ODD])
        with _legacy(ix) as old:
            assert _all_searches(ix) == _all_searches(old)
        texts = {h.id: h.text for h in ix.search("QR-9 cushions", mode="bm25", k=20)}
        assert texts[shop[3].id].endswith("Now also sold as QR-9.")
        assert shop[1].id not in {h.id for h in ix.search(shop[1].text, k=50)}


def test_a_build_made_before_ids_json_reads_its_hits_from_the_engine(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache")
    with build_index(ODD, tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as ix:
        expected = _all_searches(ix)
        build = ix.build
    (build / "ids.json").unlink()
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["files"].pop("ids.json", None)  # what an earlier querywise wrote
    (build / "manifest.json").write_text(json.dumps(manifest))
    with Index.open(tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as old:
        assert old._gen.lines is None
        assert _all_searches(old) == expected


def test_chunks_that_do_not_match_ids_json_are_refused_on_open(tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path / "cache")
    with build_index(ODD, tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as ix:
        build = ix.build
    ids = json.loads((build / "ids.json").read_text())
    ids["points"] = ids["points"][:-1]
    (build / "ids.json").write_text(json.dumps(ids))
    manifest = json.loads((build / "manifest.json").read_text())
    manifest["files"].pop("ids.json", None)  # past the size check: the lines are what is compared
    (build / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexStoreError, match="does not match"):
        Index.open(tmp_path / "ix", settings=settings, embedder=HashEmbedder())


def test_lines_by_point(tmp_path: Path) -> None:
    path = tmp_path / "chunks.jsonl"
    path.write_bytes(b'{"id":"a"}\n{"id":"b"}\n{"id":"c"}\n')
    lines = ChunkLines.open(path, [4, 0, 7])
    try:
        assert lines.lines([7, 4, 0, 7]) == [b'{"id":"c"}', b'{"id":"a"}', b'{"id":"b"}', b'{"id":"c"}']
        assert json.loads(lines.json_array([7, 0])) == [{"id": "c"}, {"id": "b"}]
        assert lines.json_array([]) == b"[]"
        with pytest.raises(KeyError, match="point 5"):
            lines.lines([0, 5])
        with pytest.raises(KeyError, match="point 99"):
            lines.lines([99])
    finally:
        lines.close()
    with pytest.raises(ValueError, match="3 lines for 2 points"):
        ChunkLines.open(path, [0, 1])
    with pytest.raises(ValueError, match="distinct"):
        ChunkLines.open(path, [0, 1, 1])
    path.write_bytes(b'{"id":"a"}\n{"id":"b"}')
    with pytest.raises(ValueError):
        ChunkLines.open(path, [0, 1])
