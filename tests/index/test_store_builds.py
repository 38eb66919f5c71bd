"""Builds that fail cleanly, survive a kill, keep generations for readers and rollback (issue 12)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from querywise.config import Settings
from querywise.corpus import Chunk, CorpusError, load_corpus
from querywise.index import Index, IndexStoreError, build_index

TESTS = Path(__file__).resolve().parents[1]


class _CrashError(RuntimeError):
    pass


class _CrashingEmbedder:
    model_id, dim = "hash-bow/test", 64

    def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
        raise _CrashError("killed half-way")


def _builds(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "builds").iterdir())


def test_a_failed_first_build_leaves_a_folder_the_next_build_uses(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ix"
    with pytest.raises(_CrashError):
        build_index(shop, root, settings=settings, embedder=_CrashingEmbedder())  # type: ignore[arg-type]
    assert not (root / "CURRENT").exists()
    with build_index(shop, root, settings=settings, embedder=hash_embedder) as ix:
        assert len(ix) == len(shop)
    assert not [name for name in _builds(root) if name.startswith(".tmp-")]


_KILLED_BUILD = """
import os, signal, sys
sys.path.insert(0, sys.argv[3])
from conftest import SHOP, HashEmbedder
from querywise.config import Settings
from querywise.index import build_index

def progress(phase, total):
    if phase == "embedding and indexing":  # the build folder exists and the shard is being written
        os.kill(os.getpid(), signal.SIGKILL)
    return lambda n: None

build_index(SHOP, sys.argv[1], settings=Settings(cache_dir=sys.argv[2]), embedder=HashEmbedder(), progress=progress)
"""


def test_a_killed_first_build_leaves_a_folder_the_next_build_cleans_and_uses(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ix"
    done = subprocess.run([sys.executable, "-c", _KILLED_BUILD, str(root), str(tmp_path / "cache"), str(TESTS)], check=False, timeout=120)
    assert done.returncode == -signal.SIGKILL
    assert not (root / "CURRENT").exists()
    assert [name for name in _builds(root) if name.startswith(".tmp-")]  # what kill -9 leaves
    with build_index(shop, root, settings=settings, embedder=hash_embedder) as ix:
        assert len(ix) == len(shop)
    assert not [name for name in _builds(root) if name.startswith(".tmp-")]  # removed by the next build


def test_a_folder_with_other_things_is_still_refused(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ix"
    (root / "builds" / ".tmp-x").mkdir(parents=True)
    (root / "notes.txt").write_text("mine")
    with pytest.raises(IndexStoreError, match="not a querywise index"):
        build_index(shop, root, settings=settings, embedder=hash_embedder)
    assert (root / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(float("nan"), "nan"), (float("inf"), "inf"), ([1.0, float("-inf")], "[1]"), ({"a": float("nan")}, ".a"), (2**70, "64-bit"), ({1, 2}, "set")],
)
def test_a_payload_value_that_cannot_be_stored_is_refused_before_anything_is_written(
    tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings, value: object, shown: str  # type: ignore[no-untyped-def]
) -> None:
    bad = [*shop, Chunk(id="broken-one", text="text", payload={"rating": value})]
    with pytest.raises(IndexStoreError, match=r"chunk 'broken-one': payload field 'rating'") as info:
        build_index(bad, tmp_path / "fresh", settings=settings, embedder=hash_embedder)
    assert shown in str(info.value)
    assert not (tmp_path / "fresh").exists() and hash_embedder.calls == 0
    # Into an existing index: nothing changes, nothing is left behind.
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        before = _builds(tmp_path / "ix")
        with pytest.raises(IndexStoreError, match="broken-one"):
            build_index(bad, tmp_path / "ix", settings=settings, embedder=hash_embedder)
        assert _builds(tmp_path / "ix") == before and len(ix) == len(shop)


def test_an_embedder_returning_nan_names_the_chunk(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    class NanEmbedder:
        model_id, dim = "hash-bow/test", 64

        def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
            out = hash_embedder.embed(texts)
            out[2, 5] = float("nan")
            return out

    with pytest.raises(IndexStoreError, match=f"chunk '{shop[2].id}'.*NaN"):
        build_index(shop, tmp_path / "ix", settings=settings, embedder=NanEmbedder())  # type: ignore[arg-type]
    assert _builds(tmp_path / "ix") == []


def _snapshot(ix: Index) -> tuple[list[tuple[str, float]], list[str]]:
    hits = [(h.id, round(h.score, 6)) for mode in ("dense", "bm25", "hybrid") for h in ix.search("Vela X3 warranty", mode=mode, k=6)]  # type: ignore[arg-type]
    return hits, [c.id for c in ix.chunks()]


def test_a_reader_holding_the_previous_build_keeps_searching_through_rebuilds(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ix"
    build_index(shop, root, settings=settings, embedder=hash_embedder).close()
    reader = Index.open(root, settings=settings, embedder=hash_embedder)
    held, before = reader.manifest.build_id, _snapshot(reader)
    for n in (5, 4, 3):  # three rebuilds: keep_builds = 2 would have dropped the held build at the second
        build_index(shop[:n], root, settings=settings, embedder=hash_embedder).close()
        assert _snapshot(reader) == before and held in _builds(root)
    reader.close()
    build_index(shop[:2], root, settings=settings, embedder=hash_embedder).close()
    assert held not in _builds(root) and len(_builds(root)) == 2  # released, then removed


_READER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from conftest import HashEmbedder
from querywise.config import Settings
from querywise.index import Index

root, stop = sys.argv[1], Path(sys.argv[2])
settings, embedder = Settings(cache_dir=sys.argv[4]), HashEmbedder()
opened, failures = 0, []
while not stop.exists() and len(failures) < 3:
    try:
        with Index.open(root, settings=settings, embedder=embedder) as ix:
            assert ix.search("warranty", mode="hybrid", k=3)
            assert len(list(ix.chunks())) == len(ix)
        opened += 1
        if opened == 1:
            Path(sys.argv[2] + ".ready").touch()
    except BaseException as exc:
        failures.append(repr(exc))
print(json.dumps({"opened": opened, "failures": failures}))
"""


def test_open_then_search_during_rebuilds_never_fails(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    """A reader process opens and searches in a loop while builds replace the index; with
    keep_builds = 1 every build removes the build before it, unless a reader holds it."""
    root, stop = tmp_path / "ix", tmp_path / "stop"
    one = settings.model_copy(update={"index": settings.index.model_copy(update={"keep_builds": 1})})
    build_index(shop, root, settings=one, embedder=hash_embedder).close()
    reader = subprocess.Popen(
        [sys.executable, "-c", _READER, str(root), str(stop), str(TESTS), str(tmp_path / "cache")], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{stop}.ready").exists() and reader.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        for n in (5, 4, 3, 6, 5, 4):
            build_index(shop[:n], root, settings=one, embedder=hash_embedder).close()
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=60)
    report = json.loads(out)
    assert report["failures"] == [] and report["opened"] > 6, report


def test_rollback_switches_back_to_the_previous_build(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    from querywise.cli import app
    from querywise.index import rollback

    root = tmp_path / "ix"
    build_index(shop, root, settings=settings, embedder=hash_embedder).close()
    with build_index(shop[:2], root, settings=settings, embedder=hash_embedder) as bad:
        bad_id = bad.manifest.build_id
    result = CliRunner().invoke(app, ["index", "--rollback", "--index", str(root)])
    assert result.exit_code == 0, result.output
    with Index.open(root, settings=settings, embedder=hash_embedder) as ix:
        assert len(ix) == len(shop)
        good_id = ix.manifest.build_id
    with pytest.raises(IndexStoreError, match="no earlier build"):
        rollback(root)
    # The next build keeps the one it replaced (the rolled-back-to build), not the bad one.
    with build_index(shop[:4], root, settings=settings, embedder=hash_embedder) as new:
        assert _builds(root) == sorted([good_id, new.manifest.build_id]) and bad_id not in _builds(root)


def test_rollback_refuses_a_folder_with_one_build(tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    from querywise.cli import app

    build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder).close()
    result = CliRunner().invoke(app, ["index", "--rollback", "--index", str(tmp_path / "ix")])
    assert result.exit_code == 2 and "no earlier build" in result.output


def _folder_with_escaping_link(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Cushions\n\nReplacement cushions fit the Vela X3.\n", encoding="utf-8")
    secret = tmp_path / "outside" / "passwd"
    secret.parent.mkdir()
    secret.write_text("root:x:0:0:supersecret-token:/root:/bin/bash\n", encoding="utf-8")
    os.symlink(secret, docs / "passwd.md")
    return docs


def test_a_symlink_out_of_the_folder_is_not_indexed(tmp_path: Path, hash_embedder, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    from querywise.cli import app

    docs = _folder_with_escaping_link(tmp_path)
    with pytest.raises(CorpusError, match=r"passwd\.md: a symbolic link to .*outside the folder.*--follow-symlinks"):
        load_corpus(docs)
    result = CliRunner().invoke(app, ["index", str(docs), "--index", str(tmp_path / "ix")])
    assert result.exit_code == 2 and "--follow-symlinks" in result.output
    assert not (tmp_path / "ix").exists()
    # Asked for explicitly, the link is read.
    chunks = load_corpus(docs, follow_symlinks=True)
    with build_index(chunks, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix:
        assert [h.id for h in ix.search("supersecret", mode="bm25")] == ["passwd#0"]


def test_links_inside_the_folder_are_read_and_loops_are_not_followed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "a.md").write_text("alpha text", encoding="utf-8")
    os.symlink(docs / "sub" / "a.md", docs / "alias.md")  # a file link inside: read
    os.symlink(docs, docs / "sub" / "loop")  # a folder link inside: not descended into
    assert [c.id for c in load_corpus(docs)] == ["alias#0", "sub/a#0"]
    assert [c.id for c in load_corpus(docs, follow_symlinks=True)] == ["alias#0", "sub/a#0"]  # the loop is met once


def test_the_embedder_a_build_makes_while_it_analyses_is_closed_and_its_failure_raised(
    tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    # A build without an embedder makes its own in a thread while it analyses the corpus: the
    # build embeds with it, closes it (its cache's SQLite connection) when done, and an embedder
    # that cannot be made fails the build with its own error, leaving nothing behind.
    import threading

    import querywise.index.writing as writing

    made: list[tuple[str, _ClosingEmbedder]] = []

    class _ClosingEmbedder:
        model_id, dim = hash_embedder.model_id, hash_embedder.dim

        def __init__(self) -> None:
            self.closed = False

        def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
            assert not self.closed
            return hash_embedder.embed(texts, on_progress=on_progress)

        def close(self) -> None:
            self.closed = True

    def make(settings: Settings, **_: object) -> _ClosingEmbedder:
        made.append((threading.current_thread().name, _ClosingEmbedder()))
        return made[-1][1]

    monkeypatch.setattr(writing, "embedder_for", make)
    with build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as given:  # a given one is the caller's
        assert len(given) == len(shop)
    assert not made
    root = tmp_path / "own"
    build_index(shop, root, settings=settings).close()
    ((thread, embedder),) = made
    assert thread == "querywise-embedder-load" and embedder.closed
    assert (root / "CURRENT").exists()

    def broken(settings: Settings, **_: object) -> None:
        raise _CrashError("no model")

    monkeypatch.setattr(writing, "embedder_for", broken)
    with pytest.raises(_CrashError, match="no model"):
        build_index(shop, tmp_path / "failed", settings=settings)
    assert not (tmp_path / "failed" / "CURRENT").exists()
    assert not [name for name in _builds(tmp_path / "failed") if name.startswith(".tmp-")]


def test_the_first_slices_tokens_are_counted_once_in_the_embedders_thread(
    tmp_path: Path, shop: list[Chunk], hash_embedder, settings: Settings, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    # A build that makes its embedder counts the first slice's tokens (the window report) in the
    # thread that made it, while the main thread still analyses; every slice is counted once, and
    # the manifest says what a build with the embedder given says.
    import threading

    import querywise.index.writing as writing

    counted: list[tuple[str, list[str]]] = []

    class _Windowed:
        model_id, dim, window = hash_embedder.model_id, hash_embedder.dim, 12

        def embed(self, texts, *, on_progress=None):  # type: ignore[no-untyped-def]
            return hash_embedder.embed(texts, on_progress=on_progress)

        def token_counts(self, texts):  # type: ignore[no-untyped-def]
            counted.append((threading.current_thread().name, list(texts)))
            return [len(t.split()) + 2 for t in texts]

    monkeypatch.setattr(writing, "_EMBED_SLICE", 2)  # the shop's chunks in three slices or more
    monkeypatch.setattr(writing, "embedder_for", lambda settings, **_: _Windowed())
    with build_index(shop, tmp_path / "given", settings=settings, embedder=_Windowed()) as given:
        expected = given.manifest.n_over_window, given.manifest.embedder_window
    assert expected[0] and [thread for thread, _ in counted] == ["MainThread"] * len(counted)
    counted.clear()
    with build_index(shop, tmp_path / "own", settings=settings) as own:
        assert (own.manifest.n_over_window, own.manifest.embedder_window) == expected
    texts = [c.search_text for c in shop]
    assert counted[0] == ("querywise-embedder-load", texts[:2])
    assert [thread for thread, _ in counted[1:]] == ["MainThread"] * (len(counted) - 1)
    assert [t for _, part in counted for t in part] == texts  # each text counted once
