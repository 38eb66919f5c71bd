"""Opening a damaged index folder: every failure is an IndexStoreError naming the folder, the part
and what to do; nothing damaged is opened silently (issue 12)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from querywise.conditions import parse_where
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.embed import Embedder
from querywise.index import Index, IndexStoreError, build_index


@pytest.fixture
def built(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> Path:  # type: ignore[no-untyped-def]
    build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    return tmp_path / "ix"


def _build(root: Path) -> Path:
    return root / "builds" / (root / "CURRENT").read_text().strip()


def _use(root: Path, settings: Settings, embedder: object) -> None:
    """Open the index and use every part of it: what a damaged folder must not get past."""
    with Index.open(root, settings=settings, embedder=embedder) as ix:  # type: ignore[arg-type]
        for mode in ("dense", "bm25", "hybrid"):
            ix.search("Vela X3 warranty", mode=mode, k=6, where=parse_where(["price<300"]))  # type: ignore[arg-type]
        list(ix.chunks())


def _truncate(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def _flip_last_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-2] ^= 0x01
    path.write_bytes(bytes(data))


def _manifest_edit(**changes: object) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = _build(root) / "manifest.json"
        data = json.loads(path.read_text())
        data.update(changes)
        path.write_text(json.dumps(data))

    return edit


def _replace_with_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _replace_builds_with_file(root: Path) -> None:
    shutil.rmtree(root / "builds")
    (root / "builds").write_text("not a folder")


def _empty_shard(root: Path) -> None:
    shutil.rmtree(_build(root) / "shard")
    (_build(root) / "shard").mkdir()


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "CURRENT missing": (lambda r: (r / "CURRENT").unlink(), "CURRENT"),
    "CURRENT empty": (lambda r: (r / "CURRENT").write_text(""), "CURRENT"),
    "CURRENT binary": (lambda r: (r / "CURRENT").write_bytes(b"\x00\xff\xfe\x89PNG\r\n"), "CURRENT"),
    "CURRENT a folder": (lambda r: _replace_with_folder(r / "CURRENT"), "CURRENT"),
    "CURRENT names no build": (lambda r: (r / "CURRENT").write_text("20990101T000000-abcdef\n"), "CURRENT"),
    "builds a file": (_replace_builds_with_file, "builds"),
    "builds missing": (lambda r: shutil.rmtree(r / "builds"), "builds"),
    "manifest missing": (lambda r: (_build(r) / "manifest.json").unlink(), "manifest"),
    "manifest a folder": (lambda r: _replace_with_folder(_build(r) / "manifest.json"), "manifest"),
    "manifest truncated": (lambda r: _truncate(_build(r) / "manifest.json"), "manifest"),
    "manifest not an object": (lambda r: (_build(r) / "manifest.json").write_text("[1, 2]"), "manifest"),
    "manifest wrong type": (_manifest_edit(n_chunks="six"), "manifest"),
    "manifest unknown field": (_manifest_edit(surprise=True), "manifest"),
    "manifest old format": (_manifest_edit(format_version=1), "manifest"),
    "manifest of another build": (_manifest_edit(build_id="20200101T000000-000000"), "manifest"),
    "manifest engine server without collection": (_manifest_edit(engine="server"), "manifest"),
    "manifest n_chunks wrong": (_manifest_edit(n_chunks=5), "lexicon"),
    "lexicon missing": (lambda r: (_build(r) / "lexicon.json").unlink(), "lexicon"),
    "lexicon truncated": (lambda r: _truncate(_build(r) / "lexicon.json"), "lexicon"),
    "lexicon changed, same size": (lambda r: _flip_last_byte(_build(r) / "lexicon.json"), "lexicon"),
    "chunks missing": (lambda r: (_build(r) / "chunks.jsonl").unlink(), "chunks"),
    "chunks a folder": (lambda r: _replace_with_folder(_build(r) / "chunks.jsonl"), "chunks"),
    "chunks truncated": (lambda r: _truncate(_build(r) / "chunks.jsonl"), "chunks"),
    "chunks changed, same size": (lambda r: _flip_last_byte(_build(r) / "chunks.jsonl"), "chunks"),
    "shard missing": (lambda r: shutil.rmtree(_build(r) / "shard"), "shard"),
    "shard emptied": (_empty_shard, "shard"),
    "shard config missing": (lambda r: (_build(r) / "shard" / "edge_config.json").unlink(), "shard"),
    "shard config truncated": (lambda r: _truncate(_build(r) / "shard" / "edge_config.json"), "shard"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_each_corruption_is_a_clean_error_naming_the_part(name: str, built: Path, settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    corrupt, part = CORRUPTIONS[name]
    corrupt(built)
    with pytest.raises(IndexStoreError) as info:
        _use(built, settings, hash_embedder)
    message = str(info.value)
    assert str(built) in message and part in message, message
    assert "querywise index" in message, message  # what to do


def _shard_files(root: Path) -> Iterator[Path]:
    shard = _build(root) / "shard"
    return (p for p in sorted(shard.rglob("*")) if p.is_file() and p.stat().st_size > 1)


def test_every_truncated_shard_file_is_refused(built: Path, tmp_path: Path, settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """Qdrant loads some truncated files silently (a truncated id tracker: 3 points of 6), panics
    on others (a Rust panic is not an Exception) or would fault on a truncated memory map."""
    files = [p.relative_to(built) for p in _shard_files(built)]
    assert len(files) > 10
    for rel in files:
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(built, copy)
        _truncate(copy / rel)
        with pytest.raises(IndexStoreError, match=r"index shard: .*truncated or changed") as info:
            _use(copy, settings, hash_embedder)
        assert str(copy) in str(info.value), rel


@pytest.mark.parametrize("content", ["../../evil", "../evil-build", "/tmp", "..", ".", "a/../../evil", ".tmp-x", "a\\..\\b"])
def test_current_is_only_a_bare_build_id(content: str, built: Path, tmp_path: Path, settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    # A complete, valid build outside the folder: CURRENT must not be able to open it.
    evil = tmp_path / "evil"
    shutil.copytree(_build(built), evil)
    shutil.copytree(_build(built), tmp_path / "evil-build")
    (built / "CURRENT").write_text(content + "\n")
    with pytest.raises(IndexStoreError, match="CURRENT") as info:
        Index.open(built, settings=settings, embedder=hash_embedder)
    assert str(built) in str(info.value)


def test_a_build_folder_that_is_a_link_out_of_builds_is_refused(built: Path, tmp_path: Path, settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "elsewhere"
    shutil.copytree(_build(built), outside / "20990101T000000-abcdef")
    os.symlink(outside / "20990101T000000-abcdef", built / "builds" / "20990101T000000-abcdef")
    (built / "CURRENT").write_text("20990101T000000-abcdef\n")
    with pytest.raises(IndexStoreError, match="CURRENT"):
        Index.open(built, settings=settings, embedder=hash_embedder)


def test_a_wrong_dim_in_the_manifest_is_refused(built: Path, settings: Settings) -> None:
    _manifest_edit(dim=65)(built)
    with pytest.raises(IndexStoreError, match=r"manifest: dim 65") as info:
        Index.open(built, settings=settings)  # no embedder given: the shard's own dimension decides
    assert str(built) in str(info.value)


def test_an_embedder_of_another_dimension_is_refused(built: Path, settings: Settings) -> None:
    class Wider:
        model_id, dim = "hash-bow/wide", 128

        def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

    with pytest.raises(IndexStoreError, match=r"dim 64, but hash-bow/wide makes 128-dimensional vectors"):
        Index.open(built, settings=settings, embedder=Wider())  # type: ignore[arg-type]


def test_verify_checks_every_file_hash(built: Path, settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    with Index.open(built, settings=settings, embedder=hash_embedder, verify=True) as ix:
        ix.verify()
    payload = next(p for p in _shard_files(built) if p.name == "page_0.dat")
    _flip_last_byte(payload)  # same size: only a full hash sees it
    Index.open(built, settings=settings, embedder=hash_embedder).close()
    with pytest.raises(IndexStoreError, match=r"index shard: .*checksum"):
        Index.open(built, settings=settings, embedder=hash_embedder, verify=True)


def test_a_damaged_build_with_an_earlier_one_kept_suggests_rolling_back(built: Path, shop: list[Chunk], settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    build_index(shop[:3], built, settings=settings, embedder=hash_embedder).close()
    (_build(built) / "lexicon.json").unlink()
    with pytest.raises(IndexStoreError, match="--rollback"):
        Index.open(built, settings=settings, embedder=hash_embedder)


def test_a_rebuild_repairs_a_damaged_folder(built: Path, shop: list[Chunk], settings: Settings, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """The remedy the errors give works: a rebuild into the damaged folder."""
    (_build(built) / "lexicon.json").unlink()
    (built / "CURRENT").write_bytes(b"\x00\xff../../evil")
    build_index(shop[:4], built, settings=settings, embedder=hash_embedder).close()
    with Index.open(built, settings=settings, embedder=hash_embedder) as ix:
        assert len(ix) == 4


def test_a_lazily_loaded_embedder_of_another_model_is_refused_when_it_embeds_a_query(
    built: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Other:
        model_id, dim = "other-model/x", 384

        def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

    monkeypatch.setattr("querywise.index.store.embedder_for", lambda settings: Other())
    with Index.open(built, settings=settings) as ix:
        assert ix.search("warranty", mode="bm25")  # BM25 needs no model: the index serves it
        with pytest.raises(IndexStoreError, match="embedded with hash-bow/test, not other-model/x"):
            ix.search("warranty", mode="hybrid")


def _variant(model_id: str) -> Embedder:
    """A test embedder that calls itself ``model_id``."""
    from tests.conftest import HashEmbedder

    embedder = HashEmbedder()
    embedder.model_id = model_id  # type: ignore[misc]
    return embedder


def test_an_index_is_searched_only_with_the_precision_that_built_it(tmp_path: Path, shop: list[Chunk], settings: Settings) -> None:
    """fp32 and int8 vectors of one model are not interchangeable: a mismatch is refused by name;
    torch and ONNX fp32 (which agree within 5e-7) may be mixed."""
    variant = _variant
    build_index(shop, tmp_path / "int8", settings=settings, embedder=variant("all-MiniLM-L6-v2/onnx-int8")).close()
    with pytest.raises(IndexStoreError, match=r"embedded with all-MiniLM-L6-v2/onnx-int8, not all-MiniLM-L6-v2/onnx-fp32.*onnx-int8"):
        Index.open(tmp_path / "int8", settings=settings, embedder=variant("all-MiniLM-L6-v2/onnx-fp32"))
    build_index(shop, tmp_path / "fp32", settings=settings, embedder=variant("all-MiniLM-L6-v2/torch-fp32")).close()
    with Index.open(tmp_path / "fp32", settings=settings, embedder=variant("all-MiniLM-L6-v2/onnx-fp32")) as ix:
        assert ix.search("warranty", mode="dense")
    with pytest.raises(IndexStoreError, match="embedded with all-MiniLM-L6-v2/torch-fp32, not all-MiniLM-L6-v2/onnx-int8"):
        Index.open(tmp_path / "fp32", settings=settings, embedder=variant("all-MiniLM-L6-v2/onnx-int8"))


def test_an_int8_index_built_from_an_older_export_or_recipe_is_refused_by_name(
    tmp_path: Path, shop: list[Chunk], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The int8 model id names the recipe (`int8_key`): after a new fp32 export, an index built
    with the older int8 file is refused by name, not searched with vectors of another model."""
    from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, int8_key, int8_model_id

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.safetensors").write_bytes(b"weights")
    old = int8_model_id("all-MiniLM-L6-v2", int8_key(tmp_path / "model", INT8_VARIANTS["per-channel"]))
    monkeypatch.setattr("querywise.embed._onnx._EXPORT_RECIPE", "a newer export")
    new = int8_model_id("all-MiniLM-L6-v2", int8_key(tmp_path / "model", INT8_VARIANTS["per-channel"]))
    build_index(shop, tmp_path / "int8", settings=settings, embedder=_variant(old)).close()
    with pytest.raises(IndexStoreError, match=f"embedded with {re.escape(old)}, not {re.escape(new)}"):
        Index.open(tmp_path / "int8", settings=settings, embedder=_variant(new))
    with Index.open(tmp_path / "int8", settings=settings, embedder=_variant(old)) as ix:
        assert ix.search("warranty", mode="dense")
    # Another quantization recipe (outlier smoothing, against plain per channel) names other
    # vectors: an index built with one is refused by the other's embedder the same way.
    monkeypatch.undo()
    plain = int8_model_id("all-MiniLM-L6-v2", int8_key(tmp_path / "model", INT8_VARIANTS["per-channel"]), "per-channel")
    default = int8_model_id("all-MiniLM-L6-v2", int8_key(tmp_path / "model", INT8_VARIANTS[INT8_DEFAULT]))
    assert plain != default
    build_index(shop, tmp_path / "plain", settings=settings, embedder=_variant(plain)).close()
    with pytest.raises(IndexStoreError, match=f"embedded with {re.escape(plain)}, not {re.escape(default)}"):
        Index.open(tmp_path / "plain", settings=settings, embedder=_variant(default))
