"""Reading input files with errors that name the file and line."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["InputError", "open_text", "read_jsonl"]


class InputError(ValueError):
    """Malformed input; the message starts with `file:line:`."""

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = str(path), line, problem


def open_text(path: Path) -> io.TextIOBase:
    """Open UTF-8 text, transparently gunzipping `.gz` files."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def read_jsonl(path: Path | str, *, error: type[InputError] = InputError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise `error` naming the line."""
    path = Path(path)
    if not path.exists():
        raise error(path, None, "no such file")
    with open_text(path) as fh:
        try:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise error(path, n, f"invalid JSON ({exc.msg} at column {exc.colno})") from None
                if not isinstance(rec, dict):
                    raise error(path, n, f"expected a JSON object, got {type(rec).__name__}")
                yield n, rec
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise error(path, None, f"cannot read: {exc}") from None
