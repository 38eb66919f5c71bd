"""The service's request and response bodies (`/v1`): pydantic models, so the OpenAPI schema is
generated from them and a body that does not fit is a 422 naming the field.

No request carries a session or access field: those come from authentication
(`server.auth`). A body that names one (`session`, `access`, or an `[access]` session key such as
`market`) is rejected with a message saying so — silently dropping it would let a client believe
it had narrowed (or widened) what it sees."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from querywise.conditions import Where
from querywise.conversation import Turns
from querywise.evaluation.metrics import DEFAULT_METRICS
from querywise.index import Hit
from querywise.index.engine import Mode
from querywise.plan import QueryPlan
from querywise.triage.options import TriageOptions, options_problem

__all__ = ["AskRequest", "AskResponse", "ErrorBody", "EvalJobRequest", "PlanRequest", "PlanResponse", "SearchRequest", "SearchResponse", "TriageJobRequest", "reject_access_fields"]

#: Keys a body may never carry, whatever the deployment's `[access]` session keys are.
ACCESS_KEYS = frozenset({"session", "access", "access_constraints", "tenant", "permissions"})


def reject_access_fields(body: object, session_keys: frozenset[str]) -> None:
    """Raise ValueError when a request body names a session or access field."""
    if isinstance(body, dict):
        named = sorted(k for k in body if k in ACCESS_KEYS or k in session_keys)
        if named:
            raise ValueError(f"{', '.join(map(repr, named))}: the session and access come from your credentials, never from the "
                             "request body; remove them")


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _no_access(cls, data: Any) -> Any:
        reject_access_fields(data, frozenset())  # the deployment's own session keys are checked by the app
        return data


class PlanRequest(_Request):
    message: str = Field(min_length=1)
    history: Turns = ()
    today: dt.date | None = None  # resolves relative dates ("next week"); default: the server's date


class AskRequest(PlanRequest):
    k: int = Field(10, ge=1, le=100)
    mode: Mode = "hybrid"


class SearchRequest(_Request):
    text: str = Field(min_length=1)
    k: int = Field(10, ge=1, le=100)
    mode: Mode = "hybrid"
    filters: Where | None = None  # a `Where` as JSON (as a plan's `filters`): AND-ed with the credentials' access


class TriageJobRequest(_Request):
    """A triage of failures, as `querywise triage` reads them (the rows `eval --failures` writes)."""

    failures: list[dict[str, Any]] = Field(min_length=1)
    sample: int | None = Field(None, ge=1)
    seed: int = 0
    k: int | None = Field(None, ge=2, le=500)  # None: the depth rule of `triage.options` (corpus size, [rerank] top_n)
    context_k: int | None = Field(None, ge=1)  # None: the failures' own rule (`made_by.context_k`), else the default
    mode: Mode = "hybrid"
    eval_total: int | None = Field(None, ge=1)
    acceptable: float | None = Field(None, ge=0, le=1)

    @model_validator(mode="after")
    def _options(self) -> TriageJobRequest:
        try:
            self.options  # noqa: B018 (the options' own rules: an invalid request is refused here, 422)
        except ValidationError as exc:
            raise ValueError(options_problem(exc)) from None
        return self

    @property
    def options(self) -> TriageOptions:
        return TriageOptions(k=self.k, context_k=self.context_k, mode=self.mode, sample=self.sample, seed=self.seed,
                             eval_total=self.eval_total, acceptable=self.acceptable)


class EvalJobRequest(_Request):
    """An evaluation of labelled cases, as `querywise eval` reads them (each case's session is its own)."""

    cases: list[dict[str, Any]] = Field(min_length=1)
    # A BEIR set: its qrels file's text; `cases` are then its queries.jsonl rows ({"_id", "text"}).
    qrels: str | None = None
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS))
    mode: Mode = "hybrid"
    ablate: list[str] | None = None  # moves or modes to ablate against pass-through ([] = every one)


class PlanResponse(BaseModel):
    plan: QueryPlan


class AskResponse(BaseModel):
    plan: QueryPlan
    hits: list[Hit]
    empty_because: list[str] = Field(default_factory=list)
    relaxed: list[str] = Field(default_factory=list)


class SearchResponse(BaseModel):
    hits: list[Hit]


class ErrorBody(BaseModel):
    error: str
    detail: str
