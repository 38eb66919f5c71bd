"""The settings reference (`docs/configuration.md`), generated from the settings models.

Every section and key comes from `Settings` and the models under it; its type, constraints and
default from the pydantic field; its meaning from the comment written beside the field in the
source (the line's own comment, else the comment lines just above it) and each section's from its
class docstring. Nothing is written twice, so the page cannot drift from the code: a test
compares the committed page with `python -m querywise.config.reference`.
"""

from __future__ import annotations

import inspect
import io
import json
import textwrap
import tokenize
import types
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from querywise.config.settings import Settings

__all__ = ["field_comments", "settings_reference"]

_HEADER = """# Configuration reference

Every section and key of a querywise settings file (TOML; `querywise.toml` by convention, passed
with `--config`), with its type, default and meaning. A key left out takes its default; an
unknown section or key is an error naming the file and the key. Relative paths are read from the
file's folder. This page is generated from the settings models (`querywise/config/`) by
`python -m querywise.config.reference`; a test keeps it current.
"""


def field_comments(cls: type[BaseModel]) -> dict[str, str]:
    """Each field of `cls` (its own, not inherited) and the comment written beside it in the source."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments: dict[int, str] = {}
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            code_lines.add(tok.start[0])
    lines = source.splitlines()
    out: dict[str, str] = {}
    group, last = "", -1  # a comment above a run of fields (no blank line between them) speaks for the run
    for n, line in enumerate(lines, start=1):
        stripped = line.strip()
        name = stripped.split(":", 1)[0].strip()
        if line.startswith("    ") and not line.startswith("     ") and name.isidentifier() and name in cls.__annotations__ and ":" in stripped:
            above: list[str] = []
            k = n - 1
            while k in comments and k not in code_lines:
                above.insert(0, comments[k])
                k -= 1
            own = comments.get(n, "")
            if above:
                group = " ".join(above)
                out[name] = f"{group} {own}".strip()
            elif own:
                group, out[name] = "", own
            else:
                group = group if last == n - 1 else ""
                out[name] = group
            last = n
    return out


def _type(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return " \\| ".join(json.dumps(a.value if isinstance(a, Enum) else a) for a in args)
    if origin in (Union, types.UnionType):
        return " \\| ".join("none" if a is type(None) else _type(a) for a in args)
    if origin in (list, tuple, set, frozenset):
        return f"list of {_type(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_type(args[0])} → {_type(args[1])}" if args else "table"
    if annotation is Path:
        return "path"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _bounds(field: FieldInfo) -> str:
    marks = {annotated_types.Ge: "≥", annotated_types.Gt: ">", annotated_types.Le: "≤", annotated_types.Lt: "<"}
    parts = [f"{sign} {getattr(m, attr)}" for m in field.metadata for kind, sign in marks.items() if isinstance(m, kind)
             for attr in ("ge", "gt", "le", "lt") if hasattr(m, attr)]
    parts += [f"length ≥ {m.min_length}" for m in field.metadata if isinstance(m, annotated_types.MinLen)]
    return ", ".join(parts)


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        factory: Any = field.default_factory
        if factory in (list, dict, set, tuple):
            return "empty"
        value = factory()
        if isinstance(value, BaseModel):
            return "see below"
        if isinstance(value, Path):  # machine-dependent: say how it is found
            return (inspect.getdoc(factory) or "").splitlines()[0].rstrip(".") or factory.__name__
        return f"`{json.dumps(value, default=str)}`" if value not in ([], {}) else "empty"
    if field.default is PydanticUndefined:
        return "required"
    value = field.default
    if isinstance(value, BaseModel):
        return "see below"
    if value is None:
        return "none"
    if isinstance(value, Enum):
        value = value.value
    return f"`{json.dumps(value, default=str)}`"


def _inner_model(annotation: Any) -> tuple[str, type[BaseModel]] | None:
    """("table" | "list" | "map", model) when a field holds settings models."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table", annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        for a in args:
            if (inner := _inner_model(a)) is not None:
                return inner
    if origin is list and args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return "list", args[0]
    if origin is dict and len(args) == 2 and isinstance(args[1], type) and issubclass(args[1], BaseModel):
        return "map", args[1]
    return None


def _comments(model: type[BaseModel]) -> dict[str, str]:
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if issubclass(cls, BaseModel) and cls is not BaseModel:
            out |= {k: v for k, v in field_comments(cls).items() if v}
    return out


def _sections(model: type[BaseModel], heading: str) -> Iterator[str]:
    doc = model.__doc__ or ""  # the class's own docstring (inspect.getdoc would inherit pydantic's)
    shapes = {name: _inner_model(f.annotation) for name, f in model.model_fields.items()}
    scalars = [(name, f) for name, f in model.model_fields.items() if (held := shapes[name]) is None or held[0] == "map"]
    comments = _comments(model)
    yield f"## `{heading}`" if heading else "## Top level"
    yield ""
    if doc:
        yield " ".join(doc.split())
        yield ""
    if scalars:
        yield "| key | type | default | meaning |"
        yield "|---|---|---|---|"
        for name, f in scalars:
            kind = _type(f.annotation) + (f" ({b})" if (b := _bounds(f)) else "")
            meaning = " ".join(comments.get(name, "").split()).replace("|", "\\|")
            yield f"| `{name}` | {kind} | {_default(f)} | {meaning} |"
        yield ""
    for name, inner in shapes.items():
        if inner is None:
            continue
        shape, sub = inner
        key = f"{heading}.{name}" if heading else name
        if shape == "table":
            yield from _sections(sub, key)
        elif shape == "list":
            yield from _sections(sub, f"[{key}]")
        else:
            yield from _sections(sub, f"{key}.NAME")


_CATALOG = """## The catalog file (`[deployment] catalog`)

JSONL, one entity (a product, a plan, a part) a line, read by `querywise.Catalog.load`; a bad line
is an error naming the file and the line.

| key | type | default | meaning |
|---|---|---|---|
| `name` | string | required | what users call it; matched in messages longest name first |
| `id` | string | the name | the stable id plans and `[filters] catalog_link` refer to |
| `aliases` | list of string | empty | other names users say for it |
| `part_numbers` | list of string | empty | its part numbers: what exact lookup and the "not a part number we know" question read (their shapes are the deployment's part numbers unless `[understanding] part_numbers` says otherwise) |
| `description` | string | `""` | shown in plans that name it (e.g. "like X but cheaper") |
| any other key | any JSON | – | a field of the entity (category, brand, price_usd, markets, ...): `[filters.fields.NAME] catalog_field` reads its values |
"""


def settings_reference() -> str:
    """The reference page, in Markdown."""
    return _HEADER + "\n" + "\n".join(_sections(Settings, "")).rstrip() + "\n\n" + _CATALOG


if __name__ == "__main__":
    import sys

    sys.stdout.write(settings_reference())
