"""What every move shares: its resources, and the defaults of the `Move` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from querywise.plan import TraceStep
from querywise.understand.draft import Draft, Have, Resources

__all__ = ["BaseMove"]


class BaseMove:
    """Requires nothing and applies to every draft unless a subclass says otherwise."""

    name: ClassVar[str]
    switches: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, resources: Resources) -> None:
        self.r = resources
        self.settings = resources.settings

    @classmethod
    def requires(cls, have: Have) -> str | None:
        return None

    def applies(self, draft: Draft) -> str | None:
        return None

    def run(self, draft: Draft) -> tuple[Draft, Sequence[TraceStep]]:
        raise NotImplementedError
