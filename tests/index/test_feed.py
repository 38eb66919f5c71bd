"""A build embeds in a thread ahead of the writer (`index.feed`): what it writes does not depend
on how the corpus is sliced or on how far the embedding runs ahead, and a failure on either side
ends the build with its own error instead of a hang."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

import querywise.index.feed as feed
from querywise.config import IndexSettings, Settings
from querywise.index import IndexStoreError, build_index
from querywise.index.engine import EdgeEngine
from tests.conftest import PASSAGES, SHOP, HashEmbedder

CORPUS = [*SHOP, *PASSAGES]


class _WindowEmbedder(HashEmbedder):
    """Counts words as tokens, reads the first 12: a build reports the chunks past it."""

    window = 12

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(t.split()) + 2 for t in texts]


def _written(root: Path) -> dict[str, object]:
    """What a build wrote, file by file (the shard's segment folder, named at random, masked),
    and its manifest less the build's id, time and file digests."""
    build = root / "builds" / (root / "CURRENT").read_text().strip()
    files = {
        "/".join(p if i != 2 else "SEGMENT" for i, p in enumerate(path.relative_to(build).parts)): hashlib.sha256(
            json.dumps(json.loads(path.read_bytes()), sort_keys=True).encode() if path.suffix == ".json" else path.read_bytes()
        ).hexdigest()
        for path in sorted(build.rglob("*")) if path.is_file() and path.name != "manifest.json"
    }
    manifest = json.loads((build / "manifest.json").read_text())
    for key in ("build_id", "created", "build_seconds", "files"):
        manifest.pop(key)
    return {"files": files, "manifest": manifest}


@pytest.mark.parametrize("sentences", [False, True])
def test_slicing_and_running_ahead_leave_the_build_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sentences: bool) -> None:
    settings = Settings(cache_dir=tmp_path / "cache", index=IndexSettings(sentence_vectors=sentences))
    build_index(CORPUS, tmp_path / "whole", settings=settings, embedder=_WindowEmbedder()).close()
    monkeypatch.setattr(feed, "SLICE", 2)  # 6 slices, not 1
    monkeypatch.setattr(feed, "AHEAD", 1)
    build_index(CORPUS, tmp_path / "sliced", settings=settings, embedder=_WindowEmbedder()).close()
    whole, sliced = _written(tmp_path / "whole"), _written(tmp_path / "sliced")
    assert sliced == whole  # chunks.jsonl, ids, lexicon, the shard (vectors, BM25 weights, payloads), the manifest
    manifest = whole["manifest"]
    assert isinstance(manifest, dict)
    over = sum(len(c.search_text.split()) + 2 > 12 for c in CORPUS)
    assert 0 < over < len(CORPUS) and manifest["n_over_window"] == over and manifest["embedder_window"] == 12


def test_progress_made_before_the_bar_is_shown_is_counted(tmp_path: Path, hash_embedder: HashEmbedder, settings: Settings,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The embedding starts while the corpus is analysed, before the build shows its bar: the bar
    # still ends at its total, each text counted once.
    monkeypatch.setattr(feed, "SLICE", 3)
    bars: dict[str, list[int]] = {}

    def progress(phase: str, total: int | None) -> Callable[[int], None]:
        bars[phase] = []
        return bars[phase].append

    build_index(CORPUS, tmp_path / "ix", settings=settings, embedder=hash_embedder, progress=progress).close()
    assert sum(bars["embedding and indexing"]) == len(CORPUS)


class _FailsOnCall(HashEmbedder):
    def __init__(self, call: int, nan: bool = False) -> None:
        super().__init__()
        self.call, self.nan = call, nan

    def embed(self, texts: Sequence[str], *, on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = super().embed(texts, on_progress=on_progress)
        if self.calls == self.call:
            if not self.nan:
                raise RuntimeError("the model crashed")
            out[-1] = np.nan
        return out


def _build_in_time(*args: object, **kwargs: object) -> BaseException | None:
    """build_index in a thread, which must end within 60 s (a feed that hangs fails the test); what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            build_index(*args, **kwargs).close()  # type: ignore[arg-type]
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the build hung"
    return raised[0] if raised else None


def _builds(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "builds").iterdir())


def test_an_embedding_failure_in_a_later_slice_fails_the_build_and_leaves_nothing(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feed, "SLICE", 2)
    crashed = _build_in_time(CORPUS, tmp_path / "crash", settings=settings, embedder=_FailsOnCall(3))
    assert isinstance(crashed, RuntimeError) and "the model crashed" in str(crashed)
    nan = _build_in_time(CORPUS, tmp_path / "nan", settings=settings, embedder=_FailsOnCall(4, nan=True))
    assert isinstance(nan, IndexStoreError) and repr(CORPUS[7].id) in str(nan)  # slice 4's last chunk, named
    for root in (tmp_path / "crash", tmp_path / "nan"):
        assert not (root / "CURRENT").exists() and not _builds(root)


def test_a_writer_that_fails_stops_the_embedding_running_ahead(tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer fails on its first slice while the feed has filled its queue and waits to add
    # more: the build ends with the writer's error and the feed stops embedding.
    monkeypatch.setattr(feed, "SLICE", 1)
    monkeypatch.setattr(feed, "AHEAD", 1)
    embedder = HashEmbedder()
    gate = threading.Event()

    def upsert(self: EdgeEngine, points: object) -> None:
        gate.wait(10)  # until the feed is blocked on a full queue
        raise OSError("disk full")

    monkeypatch.setattr(EdgeEngine, "upsert", upsert)
    waiting = feed.EmbeddingFeed._put

    def put(self: feed.EmbeddingFeed, part: feed.Embedded | None) -> None:
        if self._queue.full():
            gate.set()
        waiting(self, part)

    monkeypatch.setattr(feed.EmbeddingFeed, "_put", put)
    failed = _build_in_time(CORPUS, tmp_path / "ix", settings=settings, embedder=embedder)
    assert isinstance(failed, OSError) and "disk full" in str(failed)
    assert embedder.calls < len(CORPUS)  # stopped, not run to the end
    assert not (tmp_path / "ix" / "CURRENT").exists() and not _builds(tmp_path / "ix")
