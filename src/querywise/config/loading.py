"""Reading and writing settings files: TOML, paths relative to the file, errors that say where."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from querywise.config.settings import Settings
from querywise.config.understanding import check_routes_declared
from querywise.files import InputError, read_jsonl, write_atomic


class ConfigError(ValueError):
    """A settings file that cannot be read or does not validate; the message says where."""


_PATH_KEYS = {
    ("deployment", "catalog"), ("deployment", "plan_log"), ("rerank", "model"), ("routing", "examples_file"), ("routing", "encoder"), ("llm", "scripted_file"), ("llm", "gguf_path"),
    ("server", "jwt_public_key"), ("spelling", "query_log"), ("ambiguity", "history"),
}


def _resolve_paths(data: dict[str, object], base: Path) -> None:
    """Paths in a config file are relative to that file, not to the working directory."""
    for section, key in _PATH_KEYS:
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str):
            table[key] = str((base / table[key]).resolve())
    if isinstance(data.get("cache_dir"), str):
        data["cache_dir"] = str((base / str(data["cache_dir"])).expanduser().resolve())


def write_settings_file(source: Path | None, target: Path, changes: Mapping[str, Mapping[str, Any]]) -> Settings:
    """Write `source` (None: an empty file) to `target` with `changes` ({section: {key: value}})
    set, keeping its comments and layout (tomlkit); relative paths in it are rewritten to stay
    right from `target`'s folder. Returns the settings `target` now loads (a ConfigError if not)."""
    import tomlkit

    doc = tomlkit.parse(source.read_text(encoding="utf-8")) if source is not None else tomlkit.document()
    if source is not None and source.resolve().parent != target.resolve().parent:
        old, new = source.resolve().parent, target.resolve().parent
        rebase = [(section, key) for section, key in _PATH_KEYS] + [(None, "cache_dir")]
        for section, key in rebase:
            table: Any = doc if section is None else doc.get(section)
            if isinstance(table, MutableMapping) and isinstance(table.get(key), str) and not Path(str(table[key])).expanduser().is_absolute():
                table[key] = os.path.relpath((old / str(table[key])).resolve(), new)
    for section, values in changes.items():
        table = doc.get(section)
        if table is None:
            table = tomlkit.table()
            doc[section] = table
        for key, value in values.items():
            table[key] = value
    write_atomic(target, tomlkit.dumps(doc))  # a failed write never leaves a half settings file
    return load_settings(target)


def _read_toml(p: Path) -> dict[str, Any]:
    """The TOML table of file `p`; a ConfigError naming the file (and line) otherwise."""
    import tomllib

    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{p}: is a folder, not a settings file") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{p}:{line}: not UTF-8 text ({exc.reason}); TOML files are UTF-8: save it as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{p}: invalid TOML: arrays or tables nested too deeply") from None
    except ValueError as exc:  # an integer longer than Python converts
        long = re.search(rf"\d[\d_]{{{sys.get_int_max_str_digits() - 1},}}", text)
        where = f"{p}:{text.count(chr(10), 0, long.start()) + 1}" if long else str(p)
        raise ConfigError(f"{where}: invalid TOML: {exc}".split("; use sys.set_int_max_str_digits")[0]) from None


def _problems(exc: ValidationError) -> str:
    """Pydantic's errors as `key: problem; ...` (a validator that names its key says it once)."""
    out = []
    for e in exc.errors():
        loc, msg = ".".join(map(str, e["loc"])), e["msg"].removeprefix("Value error, ")
        out.append(msg if not loc or msg.startswith(loc) else f"{loc}: {msg}")
    return "; ".join(out)


def _plan_log_problem(log: Path) -> str | None:
    """Why plans cannot be appended to `log`, or None. Checked when settings are loaded, so a
    bad plan log stops a command before it searches, not after."""
    try:
        if log.is_dir():
            return f"{log} is a folder; name a file to append plans to"
        if log.exists():
            return None if os.access(log, os.W_OK) else f"{log} is not writable"
        parent = log.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            return f"{log} cannot be created: {parent} is a file, not a folder"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"{log} cannot be created: the folder {parent} is not writable"
    except OSError as exc:
        return f"{log}: {exc.strerror or exc}"
    return None


def _check_files(s: Settings, p: Path) -> None:
    """What only the file system can tell: the encoder folder exists, the plan log can be written,
    and, when routes are declared by the examples file alone, every route named is one of its labels."""
    encoder = s.routing.encoder
    if encoder is not None and not encoder.is_dir():
        raise ConfigError(f"{p}: routing.encoder: {encoder}: no such folder; fine-tune one with `querywise router-train`, or remove the key")
    if s.deployment.plan_log is not None and (problem := _plan_log_problem(s.deployment.plan_log)):
        raise ConfigError(f"{p}: deployment.plan_log: {problem}")
    examples = s.routing.examples_file
    if examples is None:
        return
    declared = {r.name for r in s.routing.routes}
    labels: set[str] = set()
    try:
        for line, rec in read_jsonl(examples):
            label = rec.get("label")
            if not isinstance(rec.get("text"), str) or not isinstance(label, str):
                raise InputError(examples, line, 'expected {"text": ..., "label": ...}')
            if declared and label not in declared:
                raise InputError(examples, line, f"label {label!r} is not a declared route (routes: {', '.join(sorted(declared))}); add it to [[routing.routes]]")
            labels.add(label)
    except InputError as exc:
        raise ConfigError(f"{p}: routing.examples_file: {exc}") from None
    if not declared:
        try:
            check_routes_declared(labels, s.route_references(), source=f"the labels of {examples.name}")
        except ValueError as exc:
            raise ConfigError(f"{p}: {exc}") from None


def load_settings(path: Path | str | None) -> Settings:
    """Settings from a TOML file, or the embedded defaults when `path` is None. Paths in the
    file are relative to it. Anything wrong — unreadable or invalid TOML, an unknown section or
    key, a bad value, a route nobody declared, a missing encoder folder, a plan log that cannot
    be written — is a `ConfigError` naming the file and the key (or line).

    >>> load_settings(None).index.rrf_k
    60
    """
    if path is None:
        return Settings()
    p = Path(path)
    data = _read_toml(p)
    unknown = sorted(set(data) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"{p}: unknown section(s) {', '.join(unknown)}; known: {', '.join(Settings.model_fields)}")
    _resolve_paths(data, p.parent)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{p}: {_problems(exc)}") from None
    _check_files(settings, p)
    return settings
