"""The read path writes nothing: a search embeds its query in memory, never into the on-disk cache,
and leaves every file of the index folder as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from querywise.conditions import Match, Where
from querywise.config import Settings
from querywise.corpus import Chunk
from querywise.embed import CachedEmbedder
from querywise.index import Index, build_index
from querywise.service import QueryWise
from tests.conftest import HashEmbedder


def _files(cache: Path) -> dict[str, tuple[int, int]]:
    """Each file of the cache folder (the database, its WAL and shared memory): size and mtime."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(cache.iterdir())}


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Each file under `root`, by its path there: size and mtime."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_searches_leave_every_file_of_the_index_folder_as_it_was(tmp_path: Path, shop: list[Chunk]) -> None:
    """Opening the folder may touch Qdrant's own files; searching it, in every mode and with a
    filter, writes none (nor the cache folder: there is none to write to)."""
    settings = Settings(cache_dir=tmp_path / "cache")
    build_index(shop, tmp_path / "ix", settings=settings, embedder=HashEmbedder()).close()
    with Index.open(tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as ix:
        before = _tree(tmp_path)
        for i in range(20):
            for mode in ("dense", "bm25", "hybrid"):
                assert ix.search(f"warranty of the vela x{i} headphones", mode=mode, k=5)
        assert ix.search("headphones", k=3, where=Where(conditions=(Match(field="category", value="headphones"),)))
        assert _tree(tmp_path) == before


def test_searches_after_a_build_write_nothing_to_the_embedding_cache(tmp_path: Path, shop: list[Chunk]) -> None:
    model = HashEmbedder()
    with (CachedEmbedder(model, tmp_path / "cache") as cached,
          build_index(shop, tmp_path / "ix", settings=Settings(cache_dir=tmp_path), embedder=cached) as ix):
        before = _files(tmp_path / "cache")
        queries = [f"warranty of the vela x{i} headphones" for i in range(40)]
        for q in queries:
            assert ix.search(q, k=3)
        calls = model.calls
        for q in queries:  # asked again: from memory, the model is not called
            ix.search(q, k=3)
        assert model.calls == calls
        assert _files(tmp_path / "cache") == before
        rows = cached._db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    assert rows == len(shop)  # the build's chunks, and no query


def test_a_deployment_embeds_its_router_examples_once_on_disk_and_its_messages_in_memory(
    tmp_path: Path, shop: list[Chunk]
) -> None:
    model = HashEmbedder()
    settings = Settings(cache_dir=tmp_path)
    with CachedEmbedder(model, tmp_path / "cache") as cached:
        build_index(shop, tmp_path / "ix", settings=settings, embedder=cached).close()
        with Index.open(tmp_path / "ix", settings=settings, embedder=cached) as ix, QueryWise(settings, ix) as qw:
            before = _files(tmp_path / "cache")
            for i in range(10):
                qw.search(f"how long does shipping take to zone {i}")
            assert _files(tmp_path / "cache") == before


_READ_ONLY_SEARCH = """
import json, sys
from querywise.config import Settings
from querywise.index import Index
from tests.conftest import HashEmbedder
with Index.open(sys.argv[1], settings=Settings(cache_dir=sys.argv[2]), embedder=HashEmbedder()) as ix:
    print(json.dumps([h.id for h in ix.search("warranty of the vela headphones", k=5)]))
"""


def test_an_index_on_a_read_only_mount_opens_and_searches_and_leaves_no_copy_behind(tmp_path: Path, shop: list[Chunk]) -> None:
    """Qdrant Edge writes its own files when a shard opens and closes: an index shipped in a
    read-only image or volume is searched from a private copy in the temporary folder, which
    goes when the index closes. The mount is made in a user and mount namespace (`unshare`)."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no user and mount namespaces here (unshare -rm)")
    settings = Settings(cache_dir=tmp_path / "cache")
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=HashEmbedder()) as ix:
        expected = [h.id for h in ix.search("warranty of the vela headphones", k=5)]
    (tmp_path / "ro").mkdir()
    (tmp_path / "tmp").mkdir()
    script = (f"mount --bind {tmp_path / 'ix'} {tmp_path / 'ro'} && mount -o remount,ro,bind {tmp_path / 'ro'} && "
              f"! touch {tmp_path / 'ro' / 'probe'} 2>/dev/null && exec \"$0\" -c \"$1\" {tmp_path / 'ro'} {tmp_path / 'cache'}")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script, sys.executable, _READ_ONLY_SEARCH],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == expected
    assert not list((tmp_path / "tmp").iterdir())  # the copy went with the index
