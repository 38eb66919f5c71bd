"""What every settings section shares: strict, frozen, and validated again when copied."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict


def default_cache_dir() -> Path:
    """`$QUERYWISE_CACHE_DIR`, else `$XDG_CACHE_HOME/querywise`, else `~/.cache/querywise`."""
    if env := os.environ.get("QUERYWISE_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "querywise"


def check_pattern(pattern: str, what: str) -> None:
    """ValueError naming `what` when `pattern` is no regex (they are always used case-insensitive)."""
    try:
        re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"{what} {pattern!r} does not compile: {exc}") from None


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied, validated like settings read from a file: pydantic's own
        copy skips validators, so a changed section could otherwise name a route nobody declared."""
        copied = super().model_copy(update=update, deep=deep)
        return type(self).model_validate(copied.model_dump()) if update else copied
