"""`querywise.Client`: the service's `/v1` API from Python (httpx), answers read into the same
models the library returns (`QueryPlan`, `Hit`).

>>> with Client("http://127.0.0.1:8000", token=jwt) as qw:          # doctest: +SKIP
...     answer = qw.ask("and the Pro?", history=["warranty on the X3?"])
...     answer.plan.queries[0].text, answer.hits[0].id

The session is the token's: the client sends none (the service refuses a body that does).
An error answer raises `ServiceError` with the status and the service's reason.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Mapping, Sequence
from typing import Any, Self

import httpx
from pydantic import BaseModel, Field

from querywise.conditions import Where
from querywise.conversation import Turn
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.plan import QueryPlan

__all__ = ["AskResult", "Client", "ServiceError"]


class ServiceError(RuntimeError):
    """The service answered with an error status."""

    def __init__(self, status: int, error: str, detail: str) -> None:
        super().__init__(f"{status} {error}: {detail}")
        self.status, self.error, self.detail = status, error, detail


class AskResult(BaseModel):
    """`/v1/ask`'s answer."""

    plan: QueryPlan
    hits: list[Hit]
    empty_because: list[str] = Field(default_factory=list)
    relaxed: list[str] = Field(default_factory=list)


class Client:
    """A connection to a querywise service. `token`: a JWT sent as `Authorization: Bearer`;
    `headers`: anything else (a gateway's signed session headers)."""

    def __init__(self, base_url: str, *, token: str | None = None, headers: Mapping[str, str] | None = None, timeout_s: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=sent, timeout=timeout_s, transport=transport)

    def plan(self, message: str, *, history: Sequence[str | Turn] = (), today: dt.date | None = None) -> QueryPlan:
        return QueryPlan.model_validate(self._post("/v1/plan", _conversation(message, history, today))["plan"])

    def ask(self, message: str, *, history: Sequence[str | Turn] = (), today: dt.date | None = None, k: int = 10, mode: Mode = "hybrid") -> AskResult:
        return AskResult.model_validate(self._post("/v1/ask", {**_conversation(message, history, today), "k": k, "mode": mode}))

    def search(self, text: str, *, k: int = 10, mode: Mode = "hybrid", filters: Where | None = None) -> list[Hit]:
        body: dict[str, Any] = {"text": text, "k": k, "mode": mode}
        if filters:
            body["filters"] = filters.model_dump(mode="json")
        return [Hit.model_validate(h) for h in self._post("/v1/search", body)["hits"]]

    def start_triage(self, failures: Sequence[Mapping[str, Any]], **options: Any) -> dict[str, Any]:
        """Start a triage job of `failures` (the rows `eval --failures` writes); options as
        `/v1/triage` takes them (sample, seed, k, context_k, mode...). Needs the jobs scope."""
        return self._post("/v1/triage", {"failures": list(failures), **options})

    def start_eval(self, cases: Sequence[Mapping[str, Any]], **options: Any) -> dict[str, Any]:
        """Start an eval job of `cases` (as `eval` reads them); options: metrics, mode, ablate."""
        return self._post("/v1/eval", {"cases": list(cases), **options})

    def job(self, job_id: str) -> dict[str, Any]:
        return self._answer(self._http.get(f"/v1/jobs/{job_id}"))

    def wait(self, job_id: str, *, timeout_s: float = 600.0, poll_s: float = 0.5) -> dict[str, Any]:
        """The job once done or failed (its `result` is the report JSON); TimeoutError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.job(job_id)
            if job["status"] in ("done", "failed"):
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['status']} after {timeout_s:g} s")
            time.sleep(poll_s)

    def ready(self) -> bool:
        return self._http.get("/readyz").status_code == 200

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._answer(self._http.post(path, json=body))

    @staticmethod
    def _answer(response: httpx.Response) -> dict[str, Any]:
        try:
            data: dict[str, Any] = response.json()
        except ValueError:  # not JSON: a proxy's page, a crash
            data = {}
        if response.status_code >= 400:
            raise ServiceError(response.status_code, str(data.get("error", "error")), str(data.get("detail", response.text[:500])))
        return data

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _conversation(message: str, history: Sequence[str | Turn], today: dt.date | None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message, "history": [t.model_dump() if isinstance(t, Turn) else t for t in history]}
    if today is not None:
        body["today"] = today.isoformat()
    return body
