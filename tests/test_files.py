"""The one atomic write: a file is replaced whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from querywise.files import is_partial_write, write_atomic


def test_text_bytes_and_lines_are_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    write_atomic(path, "caf\u00e9\n")
    assert path.read_bytes() == "caf\u00e9\n".encode()
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    write_atomic(path, ["a\n", "b\n"])
    assert path.read_text(encoding="utf-8") == "a\nb\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_failed_write_leaves_the_old_file_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text("old\n", encoding="utf-8")

    def lines() -> Iterator[str]:
        yield "new, half written\n"
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        write_atomic(path, lines())
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["labels.jsonl"]


def test_a_failed_rename_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "CURRENT"
    path.write_text("b1\n", encoding="utf-8")

    def no_rename(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", no_rename)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "b2\n")
    assert path.read_text(encoding="utf-8") == "b1\n" and [p.name for p in tmp_path.iterdir()] == ["CURRENT"]


def test_what_a_killed_write_leaves_is_recognised() -> None:
    assert is_partial_write(".CURRENT.0123456789ab.tmp", "CURRENT")
    assert not is_partial_write("CURRENT", "CURRENT") and not is_partial_write(".labels.jsonl.0123.tmp", "CURRENT")
