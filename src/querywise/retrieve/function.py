"""A Python callable as a retriever (`module:function`): a pipeline that already exists in code.

The function is called as `function(query, k, filters)` (`filters`: the plan's validated filters as
JSON, or None) and returns hits best first, each a `Hit`, or a mapping with "id" and optionally
"score", "text", "title", "payload". Like the HTTP retriever its answer is checked against the
filters (see `retrieve.protocol`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from querywise.conditions import Where
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.retrieve.protocol import RetrieverError

__all__ = ["FunctionRetriever", "load_function"]

RetrieveFunction = Callable[[str, int, dict[str, Any] | None], Any]


def load_function(spec: str) -> RetrieveFunction:
    """Import `module:function` (dots allowed on both sides: `pkg.mod:Class.method`)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"a function retriever is 'module:function', not {spec!r}")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} for the retriever {spec!r}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{module_name!r} has no {attr!r} (the retriever {spec!r})")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"the retriever {spec!r} is not callable")
    return target


class FunctionRetriever:
    filters_inside = False

    def __init__(self, function: RetrieveFunction, *, name: str = "") -> None:
        self.function = function
        self.name = f"function retriever {name or getattr(function, '__qualname__', repr(function))}"

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        rows = self.function(text, k, where.model_dump(mode="json") if where else None)
        hits = []
        for rank, row in enumerate(rows, start=1):
            if isinstance(row, Hit):
                hits.append(row.model_copy(update={"rank": rank}))
            elif isinstance(row, Mapping) and row.get("id") is not None:
                hits.append(Hit(id=str(row["id"]), score=float(row.get("score", 0.0)), rank=rank, text=str(row.get("text") or ""),
                                title=str(row.get("title") or ""), payload=dict(row.get("payload") or {})))
            else:
                raise RetrieverError(f"{self.name}: result {rank} is neither a Hit nor a mapping with an 'id': {str(row)[:200]}")
        return hits
