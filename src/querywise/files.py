"""Reading input files with errors that name the file and line.

Every reader here turns what can go wrong with a file someone hands us into an `InputError`
(or the subclass the caller names) that says where and what to do: a missing file or a folder
where a file belongs, bytes that are not UTF-8 (with the line), a `.gz` that is not gzip or is
cut short, JSON that is invalid, nested deeper than `MAX_DEPTH` or holds a number longer than
Python converts. Lone surrogates (`"\\ud800"` in JSON) become U+FFFD, so no text read here can
fail to encode later.

Writing has one rule, `write_atomic`: a file is replaced whole or not at all.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import sys
import uuid
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DEPTH", "InputError", "fsync_dir", "is_partial_write", "open_text", "parse_jsonl_line", "read_jsonl", "read_lines",
    "replace_surrogates", "write_atomic",
]

#: How deeply a JSON record may nest (objects and arrays). Real records nest a few levels; a
#: deeper one is an attack or an accident, and would reach Python's recursion limit later on.
MAX_DEPTH = 64


class InputError(ValueError):
    """Malformed input; the message starts with `file:line:`."""

    def __init__(self, path: Path | str, line: int | None, problem: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = str(path), line, problem


_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (a valid pair becomes its character).

    Lone surrogates come from JSON escapes (`"\\ud800"`) and from command-line bytes that are
    not UTF-8 (Python decodes them with `surrogateescape`); they cannot be encoded, so they
    are replaced once, where text enters.

    >>> replace_surrogates("warranty \\udcff")
    'warranty \\ufffd'
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def open_text(path: Path) -> io.TextIOBase:
    """Open UTF-8 text, transparently gunzipping `.gz` files (errors surface on reading; prefer
    `read_lines`, which names the line)."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def _open_binary(path: Path, error: type[InputError]) -> io.BufferedIOBase:
    try:
        if path.is_dir():
            raise error(path, None, "is a folder, not a file")
        return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")
    except FileNotFoundError:
        raise error(path, None, "no such file") from None
    except OSError as exc:
        raise error(path, None, f"cannot open: {exc.strerror or exc}") from None


def read_lines(path: Path | str, *, error: type[InputError] = InputError, max_bytes: int | None = None) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for every line of a UTF-8 file (`.gz`: gunzipped), line
    endings kept; a byte-order mark is dropped. Raise `error` naming the file (and the line)
    for anything unreadable, and for a line over `max_bytes` -- found while reading it, so that a
    small .gz holding one enormous line is refused before the line is held whole."""
    path = Path(path)
    n = 0
    limit = -1 if max_bytes is None else max_bytes + 1
    with _open_binary(path, error) as fh:
        try:
            while data := fh.readline(limit):
                n += 1
                if max_bytes is not None and len(data) > max_bytes:
                    raise error(path, n, f"a line over {max_bytes:,} bytes ([limits] max_record_chars); split the record")
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise error(path, n, f"not UTF-8 text ({exc.reason} at byte {exc.start + 1} of the line); save the file as UTF-8") from None
                yield n, text.removeprefix("\ufeff") if n == 1 else text
        except gzip.BadGzipFile:
            raise error(path, None, "not a gzip file, though its name ends in .gz; decompress it or rename it") from None
        except (EOFError, zlib.error) as exc:
            raise error(path, n + 1, f"the gzip data is cut short or corrupt ({exc}); compress the file again") from None
        except OSError as exc:
            raise error(path, n + 1, f"cannot read: {exc.strerror or exc}") from None


def _depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests objects/arrays more than `limit` deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def _scrubbed(value: Any) -> Any:
    """`value` with lone surrogates replaced in every string, keys included."""
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, dict):
        return {replace_surrogates(k): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrubbed(v) for v in value]
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_LONG_DIGITS = "integer string conversion"


def read_jsonl(path: Path | str, *, error: type[InputError] = InputError) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line; raise `error` naming the line."""
    path = Path(path)
    for n, line in read_lines(path, error=error):
        rec = parse_jsonl_line(path, n, line, error=error)
        if rec is not None:
            yield n, rec


def parse_jsonl_line(path: Path, n: int, line: str, *, error: type[InputError] = InputError) -> dict[str, Any] | None:
    """The object on line `n` of a JSONL file (None for a blank line); raise `error` naming the
    line. Apart from `read_jsonl` so that a loader may skip a bad line and read on."""
    if not line.strip():
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise error(path, n, f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise error(path, n, f"JSON nested too deeply (querywise reads at most {MAX_DEPTH} levels)") from None
    except ValueError as exc:  # a number longer than Python converts
        if _LONG_DIGITS not in str(exc):
            raise error(path, n, f"invalid JSON ({exc})") from None
        limit = sys.get_int_max_str_digits()
        raise error(path, n, f"a number has more than {limit} digits; write it as a string") from None
    if not isinstance(rec, dict):
        raise error(path, n, f"expected a JSON object, got {type(rec).__name__}")
    if line.count("{") + line.count("[") > MAX_DEPTH and _depth_over(rec, MAX_DEPTH):
        raise error(path, n, f"JSON nested too deeply (querywise reads at most {MAX_DEPTH} levels)")
    if _SURROGATE_ESCAPE.search(line):
        rec = _scrubbed(rec)
    return rec


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries to disk (a rename inside it survives a power cut)."""
    with contextlib.suppress(OSError):  # some file systems cannot sync a directory
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _partial_name(name: str) -> str:
    return f".{name}.{uuid.uuid4().hex[:12]}.tmp"


def is_partial_write(entry: str, name: str) -> bool:
    """Whether `entry` is what a killed `write_atomic` of file `name` can leave beside it."""
    return entry.startswith(f".{name}.") and entry.endswith(".tmp")


def write_atomic(path: Path | str, content: str | bytes | Iterable[str]) -> None:
    """Replace the file at `path` with `content` (text as UTF-8, bytes as they are, or the lines of
    an iterable) whole or not at all: it is written to a file beside it, flushed to disk, then
    renamed over it. A failure at any point leaves the old file (or none) and no partial one; a
    process killed half-way leaves only the temporary file (`is_partial_write` names it).
    """
    path = Path(path)
    tmp = path.with_name(_partial_name(path.name))  # the same folder: the rename is atomic
    try:
        # "x": created with the umask's permissions, never through another's file or link.
        with open(tmp, "xb") as fh:
            if isinstance(content, bytes):
                fh.write(content)
            elif isinstance(content, str):
                fh.write(content.encode("utf-8"))
            else:
                for part in content:
                    fh.write(part.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
