"""A provider that plays recorded responses: for tests and reproducible demos.

Responses live in a JSONL file, one per line, keyed by task and normalised input:

    {"task": "plan", "input": "What's the warranty on the X2?\\nDoes it cover water damage?",
     "output": {"route": null, "standalone": "...", ...}, "usage": {"input_tokens": 600, "output_tokens": 80}}

`input` is the request's `key` (for conversational tasks, earlier turns and the message joined
by newlines). A record may hold `"error": "<reason>"` instead of `output` to play a failure.
An input with no record raises `LLMError("not_scripted")`, which the pipeline counts as a fallback.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, get_args

from querywise.files import InputError, read_jsonl
from querywise.llm.provider import (
    FailureReason,
    LLMError,
    StructuredRequest,
    StructuredResult,
    Usage,
    normalise,
)

__all__ = ["ScriptedProvider", "ScriptedResponse"]

_REASONS = set(get_args(FailureReason))


class ScriptedResponse:
    __slots__ = ("error", "output", "usage")

    def __init__(self, output: dict[str, Any] | None, usage: Usage, error: FailureReason | None = None) -> None:
        self.output, self.usage, self.error = output, usage, error


class ScriptedProvider:
    """Looks each request up by `(request.name, normalise(request.key))`.

    >>> p = ScriptedProvider.from_records([{"task": "plan", "input": "Hi", "output": {"route": "x"}}])
    >>> p.complete(StructuredRequest("plan", "", (), {}, key="  hi ")).parsed
    {'route': 'x'}
    """

    name = "scripted"

    def __init__(self, responses: Mapping[tuple[str, str], ScriptedResponse], *, model: str = "scripted") -> None:
        self.responses = dict(responses)
        self.model = model
        self.calls: list[StructuredRequest] = []

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], *, source: str = "<records>") -> ScriptedProvider:
        responses: dict[tuple[str, str], ScriptedResponse] = {}
        for i, rec in enumerate(records, start=1):
            responses[_key_of(rec, source, i)] = _response_of(rec, source, i)
        return cls(responses)

    @classmethod
    def load(cls, path: Path | str) -> ScriptedProvider:
        """Responses from a JSONL file; a bad line is an `InputError` naming the file and line."""
        responses: dict[tuple[str, str], ScriptedResponse] = {}
        for line, rec in read_jsonl(path):
            responses[_key_of(rec, path, line)] = _response_of(rec, path, line)
        return cls(responses)

    def complete(self, request: StructuredRequest) -> StructuredResult:
        started = time.perf_counter()
        self.calls.append(request)
        found = self.responses.get((request.name, normalise(request.key)))
        if found is None:
            raise LLMError("not_scripted", f"no scripted {request.name!r} response for {request.key!r}")
        if found.error is not None:
            raise LLMError(found.error, "scripted failure", usage=found.usage)
        assert found.output is not None
        return StructuredResult(parsed=dict(found.output), usage=found.usage, latency_s=time.perf_counter() - started, model=self.model)

    def close(self) -> None:
        return None


def _key_of(rec: Mapping[str, Any], source: Path | str, line: int) -> tuple[str, str]:
    task, text = rec.get("task"), rec.get("input")
    if not isinstance(task, str) or not isinstance(text, str):
        raise InputError(source, line, 'expected {"task": str, "input": str, "output": {...}}')
    return task, normalise(text)


def _response_of(rec: Mapping[str, Any], source: Path | str, line: int) -> ScriptedResponse:
    raw_usage = rec.get("usage") or {}
    try:
        usage = Usage.model_validate(raw_usage)
    except ValueError as exc:
        raise InputError(source, line, f"bad usage: {exc}") from None
    error = rec.get("error")
    if error is not None:
        if error not in _REASONS:
            raise InputError(source, line, f"unknown error {error!r}; known: {', '.join(sorted(_REASONS))}")
        return ScriptedResponse(None, usage, error)  # a JSON string, one of the reasons
    output = rec.get("output")
    if not isinstance(output, dict):
        raise InputError(source, line, '"output" must be a JSON object (or give "error")')
    return ScriptedResponse(output, usage)
