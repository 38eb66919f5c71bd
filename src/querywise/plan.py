"""The query plan: the one contract between understanding and retrieval.

Every message becomes a `QueryPlan`: where it goes, what the retriever searches for, which hard
constraints apply, whether to answer, assume, ask or cover, and a trace of every move. A plan
serialises to one JSON line and reads back unchanged, so "what did the retriever actually search
for?" is answerable for every request.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from querywise.conditions import Where

__all__ = [
    "PLAN_VERSION",
    "Action",
    "Answer",
    "Ask",
    "Assume",
    "Cover",
    "DriftGuard",
    "LLMCallInfo",
    "PlanQuery",
    "QueryKind",
    "QueryPlan",
    "Readings",
    "RouteEvidence",
    "TraceStep",
    "plan_json_schema",
]

PLAN_VERSION = 1

# "semantic": the message with its hard constraints moved into filters (a self-query); it is
# searched instead of the original because those words now act as filters, not as text.
# "part": one ask of a message that holds several for different routes, searched beside the first.
# "reading": the message with an ambiguous mention replaced by one reading's catalog name, searched
# beside it (restricted to that reading's documents when the catalog links them): what assume and
# cover search.
QueryKind = Literal["original", "standalone", "semantic", "similar", "spelling", "exact", "multi", "hyde", "step_back", "query2doc", "part", "reading"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DriftGuard(_Model):
    """A condition under which execute leaves a query out of the fusion: the text `against` (the
    message as typed) finds something clearly on its own and the query's first hit is far from it.
    Read from `against`'s dense list (cosines), which only execute has: the plan declares the
    condition, execute measures it and its trace says whether it fired and on what figures.

    clarity: `against`'s best cosine less its 50th best must reach it; away: its best cosine less
    its cosine to the query's first hit must reach it (the hit's cosine taken as the list's last
    when the hit is not in its first `depth`)."""

    against: str = Field(min_length=1)
    clarity: float
    away: float
    depth: int = Field(200, ge=50)


class PlanQuery(_Model):
    """One text the retriever searches; results of all queries are fused with weighted RRF."""

    text: str = Field(min_length=1)
    kind: QueryKind
    weight: float = Field(1.0, gt=0)
    # None: the plan's search mode. HyDE searches dense only, query2doc BM25 only.
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    # Conditions only this query's results must meet, AND-ed with the plan's filters and access
    # (an exact lookup: the chunks that hold the identifier). Never widens what the plan may see.
    where: Where | None = None
    # The catalog entry this query searches for (kind "reading"): execute groups its hits by it.
    reading: str | None = Field(None, exclude_if=lambda v: v is None)
    # Left out of the fusion when the message drifts away from what this query finds (the answer
    # query of a follow-up: a change of subject after an answer). None: always fused.
    unless_drift: DriftGuard | None = Field(None, exclude_if=lambda v: v is None)


class Readings(_Model):
    """A mention whose readings' answers may differ, for the generator: say what was assumed
    (`chosen`), or answer per reading, or ask. Set whenever the ambiguity move saw one."""

    mention: str
    readings: list[str] = Field(min_length=2)  # catalog names, most probable first
    chosen: str | None = None  # the reading assumed, or the one the session settles; None: asked or covered
    why: str = ""


class Answer(_Model):
    type: Literal["answer"] = "answer"


class Assume(_Model):
    """Answer under a stated assumption, e.g. "Assuming you mean the Solace 7 Pro"."""

    type: Literal["assume"] = "assume"
    text: str


class Ask(_Model):
    """Ask one question, answerable in a word; options come from the catalog."""

    type: Literal["ask"] = "ask"
    question: str
    options: list[str] = Field(default_factory=list)


class Cover(_Model):
    """Answer every reading side by side (few, short readings only)."""

    type: Literal["cover"] = "cover"
    readings: list[str] = Field(min_length=2)


Action = Annotated[Answer | Assume | Ask | Cover, Field(discriminator="type")]

Status = Literal["ran", "skipped", "fallback", "failed"]


class LLMCallInfo(_Model):
    """The LLM call behind a trace step: what ran, what it cost, and how it failed if it did."""

    model: str | None = None
    prompt_version: str | None = None
    timeout_s: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    # hit: served from the single-turn cache; never: a conversational input is never cached
    cache: Literal["hit", "miss", "never"] | None = None
    fallback: str | None = None  # the failure reason (querywise.llm.FailureReason) when it fell back
    policy: Literal["open", "closed"] | None = None  # the route's failure policy, on a fallback


class RouteEvidence(_Model):
    """How the router decided: which source, with which scores."""

    source: Literal["rule", "classifier", "unsure", "out_of_scope", "default"]
    scores: dict[str, float] = Field(default_factory=dict)
    margin: float | None = None
    in_scope: float | None = None
    rule: str | None = None  # the identifier rule that fired

    @property
    def deferred(self) -> bool:
        """The classifier was unsure: the LLM tier's cue."""
        return self.source == "unsure"


class TraceStep(_Model):
    """What one move did: whether it ran, why, what it changed, and what it cost.

    Code reads the typed fields (`llm`, `routing`); `details` is the move's evidence for people
    and logs, in whatever shape suits the move."""

    move: str
    status: Status
    reason: str
    changed: str | None = None  # a human-readable description of the change, None if none
    latency_ms: float = 0.0
    llm_calls: int = 0
    cost_usd: float = 0.0
    llm: LLMCallInfo | None = None
    routing: RouteEvidence | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class LeftAsk(_Model):
    """An ask of the message that this plan does not serve (several intents), and its route."""

    text: str
    route: str


class QueryPlan(_Model):
    """What happens to one message. See `../shared/DESIGN.md` for the rules it keeps."""

    version: int = PLAN_VERSION
    message: str
    route: str
    queries: list[PlanQuery] = Field(default_factory=list)
    filters: Where = Where()  # stated by the user: never relaxed
    inferred_filters: Where = Where()  # derived, not stated: relaxed first when results are empty
    access: Where = Where()  # from the authenticated session only; AND-ed into every search
    action: Action = Answer()
    trace: list[TraceStep] = Field(default_factory=list)
    # Asks of the message left for a follow-up: a message with two asks for different routes is
    # served for its first ("compare X and Y, and cancel my order": the comparison).
    left: list[LeftAsk] = Field(default_factory=list)
    # Why nothing is searched (a route that does not search, a third party's account, a failed
    # LLM on a fail-closed route); None when the plan searches its queries.
    unsearched: str | None = None
    # Readings that may differ (the ambiguity move): what the generator reads to state its
    # assumption or answer per reading. None when no mention was ambiguous.
    readings: Readings | None = Field(None, exclude_if=lambda v: v is None)

    def to_json_line(self) -> str:
        """The plan as one line of JSON (no newline inside)."""
        return self.model_dump_json()

    @classmethod
    def from_json_line(cls, line: str) -> QueryPlan:
        return cls.model_validate_json(line)

    @property
    def main_query(self) -> PlanQuery | None:
        """The query the message stands for (the first: the message, its standalone form or its
        semantic form); the others are searched beside it. What a reranker reorders for."""
        return self.queries[0] if self.queries else None

    def step(self, move: str) -> TraceStep | None:
        """The trace entry of `move`, if it is there."""
        return next((s for s in self.trace if s.move == move), None)


def plan_json_schema() -> dict[str, Any]:
    """The JSON schema of `QueryPlan` (also committed as `schemas/query_plan.schema.json`)."""
    schema = QueryPlan.model_json_schema()
    schema["$id"] = f"https://querywise.dev/schemas/query_plan.v{PLAN_VERSION}.json"
    return json.loads(json.dumps(schema))
