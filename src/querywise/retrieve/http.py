"""A retriever behind an HTTP JSON endpoint (an internal search API, a service in front of any engine).

The protocol, by default: `POST {"query": str, "k": int, "filters": <the plan's validated filters,
as `Where` dumps them>, "mode": "dense" | "bm25" | "hybrid" (a hint; an endpoint with one way to
search ignores it)}` answered by `{"hits": [{"id": str, "score": float, "text": str, "payload":
{}}]}`, best first (`text` and `payload` optional). Every name is remappable (`[retriever.fields]`;
`hits` may be a dotted path such as "data.results"). The endpoint is sent the filters but its
answer is checked against them (`filters_inside` is False): see `retrieve.protocol`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import httpx

from querywise.conditions import Where
from querywise.config import RetrieverSettings
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.llm.provider import load_json
from querywise.retrieve.protocol import RetrieverError

__all__ = ["MAX_RESPONSE_BYTES", "HTTPRetriever"]

MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # an answer past this is an error, not a memory spike


def _at(body: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(body, Mapping) or part not in body:
            return None
        body = body[part]
    return body


class HTTPRetriever:
    """POSTs each query to `settings.url`; one pooled connection for the deployment's life."""

    filters_inside = False

    def __init__(self, settings: RetrieverSettings, *, transport: httpx.BaseTransport | None = None) -> None:
        if not settings.url:
            raise ValueError("[retriever] kind = 'http' needs a url")
        self.settings, self.name = settings, f"HTTP retriever {settings.url}"
        headers = dict(settings.headers)
        for header, variable in settings.headers_env.items():  # secrets stay in the environment, not the config
            if (value := os.environ.get(variable)) is None:
                raise ValueError(f"[retriever] headers_env: the environment variable {variable!r} (for {header}) is not set")
            headers[header] = value
        self._client = httpx.Client(timeout=settings.timeout_s, headers=headers, transport=transport)

    def retrieve(self, text: str, *, k: int, where: Where | None = None, mode: Mode = "hybrid") -> list[Hit]:
        f = self.settings.fields
        body: dict[str, Any] = {f.query: text, f.k: k, f.filters: where.model_dump(mode="json") if where else None}
        if f.mode is not None:
            body[f.mode] = mode
        answer = self._post(str(self.settings.url), body)
        rows = _at(answer, f.hits)
        if not isinstance(rows, list):
            raise RetrieverError(f"{self.name}: the answer has no list at {f.hits!r} (keys: {sorted(answer) if isinstance(answer, dict) else type(answer).__name__})")
        hits = []
        for rank, row in enumerate(rows, start=1):
            if not isinstance(row, Mapping) or row.get(f.id) is None:
                raise RetrieverError(f"{self.name}: hit {rank} has no {f.id!r}: {str(row)[:200]}")
            payload = row.get(f.payload) or {}
            if not isinstance(payload, Mapping):
                raise RetrieverError(f"{self.name}: hit {rank}'s {f.payload!r} is not an object")
            try:
                score = float(row.get(f.score, 0.0))
            except (TypeError, ValueError) as exc:
                raise RetrieverError(f"{self.name}: hit {rank}'s {f.score!r} is not a number: {row.get(f.score)!r}") from exc
            hits.append(Hit(id=str(row[f.id]), score=score, rank=rank, text=str(row.get(f.text) or ""),
                            title=str(row.get(f.title) or ""), payload=dict(payload)))
        return hits

    def _post(self, url: str, body: dict[str, Any]) -> Any:
        """The endpoint's JSON answer, within ONE deadline of `timeout_s` for the whole exchange
        (httpx's timeouts are per socket read: a body trickled a byte at a time never trips them),
        at most `MAX_RESPONSE_BYTES`, its nesting checked before it is parsed."""
        timeout_s = self.settings.timeout_s
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            with self._client.stream("POST", url, json=body) as response:
                size, parts = 0, []
                for part in response.iter_bytes():
                    size += len(part)
                    if size > MAX_RESPONSE_BYTES:
                        raise RetrieverError(f"{self.name}: the answer is over {MAX_RESPONSE_BYTES:,} bytes")
                    if time.monotonic() > deadline:
                        raise RetrieverError(f"{self.name}: no whole answer within [retriever] timeout_s = {timeout_s:g} s")
                    parts.append(part)
        except httpx.HTTPError as exc:
            raise RetrieverError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        raw = b"".join(parts)
        if response.status_code >= 400:
            raise RetrieverError(f"{self.name} answered {response.status_code}: {raw[:200].decode('utf-8', 'replace')}")
        try:
            return load_json(raw)
        except ValueError as exc:
            raise RetrieverError(f"{self.name} answered with something that is not usable JSON ({exc}): {raw[:200]!r}") from None

    def close(self) -> None:
        self._client.close()
