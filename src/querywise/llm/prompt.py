"""Versioned prompts: data files under `llm/prompts/`, one per task, with a `version` string
that goes into cache keys and trace steps."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Prompt", "load_prompt"]


@dataclass(frozen=True)
class Prompt:
    task: str
    version: str
    instructions: str


@cache
def load_prompt(task: str) -> Prompt:
    """The packaged prompt of `task` (`plan`, `rewrite`, `multi_query`, `hyde`, ...)."""
    path = resources.files("querywise.llm").joinpath("prompts", f"{task}.toml")
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Prompt(task=task, version=str(data["version"]), instructions=str(data["instructions"]).strip())
