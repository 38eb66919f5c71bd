"""A cache for single-turn LLM results, keyed on the task, the normalised text and the config
version (settings + prompt versions). Conversational results are never cached: the same words
after a different conversation mean something else."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Generic, TypeVar

from querywise.config import Settings
from querywise.llm.prompt import load_prompt
from querywise.llm.provider import normalise

__all__ = ["RewriteCache", "config_version"]

V = TypeVar("V")

_TASKS = ("plan", "multi_query", "hyde", "query2doc", "step_back", "probe")


def config_version(settings: Settings) -> str:
    """A short hash of everything that changes an LLM answer or its checks: the `[llm]`,
    routing, filter and access settings and every prompt's version."""
    parts = [
        settings.llm.model_dump_json(),
        settings.routing.model_dump_json(include={"routes"}),
        settings.filters.model_dump_json(),
        settings.access.model_dump_json(),
        str(settings.deployment.catalog),
        *(load_prompt(t).version for t in _TASKS),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class RewriteCache(Generic[V]):
    """LRU of single-turn results. `get`/`put` with a non-empty history do nothing.

    >>> c: RewriteCache[str] = RewriteCache(10, "v1")
    >>> c.put("hyde", "Warranty?", (), "a passage"); c.get("hyde", "  warranty? ", ())
    'a passage'
    >>> c.put("plan", "it?", ("earlier turn",), "x"); c.get("plan", "it?", ("earlier turn",)) is None
    True
    """

    def __init__(self, max_size: int, version: str) -> None:
        self.max_size, self.version = max_size, version
        self._items: OrderedDict[tuple[str, str, str], V] = OrderedDict()
        self._lock = threading.Lock()

    def _key(self, task: str, text: str) -> tuple[str, str, str]:
        return (task, normalise(text), self.version)

    def get(self, task: str, text: str, history: Sequence[object]) -> V | None:
        if history or self.max_size == 0:
            return None
        with self._lock:
            key = self._key(task, text)
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, task: str, text: str, history: Sequence[object], value: V) -> None:
        if history or self.max_size == 0:
            return
        with self._lock:
            self._items[self._key(task, text)] = value
            self._items.move_to_end(self._key(task, text))
            while len(self._items) > self.max_size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
