"""The front door: one object that owns a deployment.

`QueryWise` holds the settings, the index, the retriever plans run against (the index, or the
user's own: `[retriever]`, `querywise.retrieve`), the understander (router, catalog, speller, the
LLM tier) and the plan log, and offers the online verbs every caller uses — the CLI, the evaluation
harness, the access probe, the benchmarks, and your application:

    >>> with QueryWise.open("querywise.toml", "my-index") as qw:                      # doctest: +SKIP
    ...     result = qw.ask("does it fold?", history=["Aero X2 specs"], session={"market": "eu"})
    ...     result.plan.queries, [h.id for h in result.hits]

`ask` plans and runs the plan. With an LLM tier and `[llm] overlap` on, the raw message is searched
(with the session's access) while the LLM works; when the final plan searches exactly the raw
message, that search is reused and the LLM's latency is the only latency. Every plan is appended
to the plan log when `[deployment] plan_log` is set.

At start-up the deployment is checked against its index (`deployment_check.check_deployment`): a
setting that would make every search return nothing (a required access field no chunk carries)
raises `DeploymentError` naming it; one that would empty some results or leave a route
unreachable is kept in `warnings`, which the CLI prints.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Self

from querywise.conditions import Where
from querywise.config import Move, PlanSlice, Settings, load_settings
from querywise.conversation import Turn, as_turns
from querywise.deployment_check import DeploymentCheck, Problem, check_deployment, check_index_fields
from querywise.embed import Embedder
from querywise.execute import PlanResult, Prefetched, execute, prefetch
from querywise.files import replace_surrogates
from querywise.index import Hit, Index
from querywise.index.engine import Mode
from querywise.llm.provider import Provider
from querywise.plan import QueryPlan, TraceStep
from querywise.planlog import PlanLog
from querywise.retrieve import Reranker, Retriever, checked, open_reranker, open_retriever
from querywise.understand.access import access_from_session, check_session
from querywise.understand.limits import within_limits
from querywise.understand.llm_rerank import LLMReranker
from querywise.understand.pipeline import Understander
from querywise.understand.routing.lookup import RouteLookup

__all__ = ["QueryWise"]


def _clean(
    message: str, history: Sequence[str | Turn], session: Mapping[str, str] | None
) -> tuple[str, list[Turn], dict[str, str] | None]:
    """Text as it enters the library: lone surrogates (from JSON escapes or non-UTF-8 bytes)
    cannot be encoded anywhere downstream, so they become U+FFFD here, once. The history
    becomes turns (a string is a user turn; `TurnError` for anything else)."""
    if session is not None:
        check_session(session)  # TypeError for session="market=eu", before anything reads it
    clean_session = None if session is None else {replace_surrogates(k): replace_surrogates(v) for k, v in session.items()}
    turns = [Turn(role=t.role, text=replace_surrogates(t.text)) for t in as_turns(history)]
    return replace_surrogates(message), turns, clean_session


class QueryWise:
    """A deployment: its settings, its index, its understander and its plan log.

    `index` may be None for a deployment that only plans (`plan`); `ask` and `search` need one.
    `provider` overrides the `[llm]` provider of the settings (tests, demos, benchmarks); the
    caller then owns it. `embedder` defaults to the index's. `retriever` and `reranker` override
    `[retriever]` and `[rerank]` (anything with the protocol's method: another team's search API,
    a hosted reranker). `lookups` are what routes answer from (`[routing.routes] lookup`): a route
    whose lookup finds nothing, or is not wired, falls back to search (`understand.routing.lookup`).

    Raises `DeploymentError` when the settings cannot work with the index (see `check`).
    """

    def __init__(
        self,
        settings: Settings,
        index: Index | None = None,
        *,
        provider: Provider | None = None,
        embedder: Embedder | None = None,
        retriever: Retriever | None = None,
        reranker: Reranker | None = None,
        lookups: Mapping[str, RouteLookup] | None = None,
    ) -> None:
        self.settings = settings
        self.lookups = dict(lookups or {})  # what routes answer from ([routing.routes] lookup); see understand.routing.lookup
        self.index = index
        if index is not None:  # stop before any model loads when no search could work
            DeploymentCheck(problems=tuple(check_index_fields(settings, index.field_presence()))).raise_errors()
        if embedder is None and index is not None:
            embedder = index.embedder
        self.understander = Understander(settings, embedder=embedder, lexicon=index.lexicon if index is not None else None, provider=provider,
                                         lookups=self.lookups, visible=index.holds if index is not None else None)
        self._provider = provider
        self._owned = ExitStack()  # what this deployment opened, closed in reverse order by `close`
        # A given provider is the caller's to close; the embedders the Understander made are not.
        self._owned.callback(self.understander.close if provider is None else self.understander.close_embedders)
        try:
            self.reranker = reranker if reranker is not None else self._reranker(settings)
            # What plans run against: given, else `[retriever]` (the querywise index by default).
            self.retriever = retriever if retriever is not None else open_retriever(settings.retriever, index, self.understander.embedder)
            # Plans run against the deployment's own index (not a retriever of the user's): what
            # triage probes directly.
            self.searches_own_index = retriever is None and settings.retriever.kind == "index" and index is not None
            if retriever is None and settings.retriever.kind != "index" and (close := getattr(self.retriever, "close", None)) is not None:
                self._owned.callback(close)
            self.check = self._check(index)
            if self.check.errors:
                self.check.raise_errors()
        except BaseException:
            self._owned.close()
            raise
        d = settings.deployment
        self.plan_log = (
            PlanLog(d.plan_log, session_values=d.plan_log_session_values, max_bytes=d.plan_log_max_bytes, backups=d.plan_log_backups)
            if d.plan_log is not None else None
        )
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def open(cls, config: Path | str | None, index: Path | str | None = None, *, provider: Provider | None = None) -> Self:
        """The deployment of a settings file (embedded defaults for None) and an index folder;
        closing it closes the index."""
        settings = load_settings(config)
        ix = Index.open(index, settings=settings) if index is not None else None
        try:
            qw = cls(settings, ix, provider=provider)
        except BaseException:
            if ix is not None:
                ix.close()
            raise
        if ix is not None:
            qw._owned.callback(ix.close)
        return qw

    @property
    def warnings(self) -> list[Problem]:
        """What the start-up check found that does not stop the deployment but empties some
        results or leaves a route unreachable (each says which setting and why)."""
        return self.check.warnings

    def with_moves(self, moves: Sequence[Move], *, off_in: Mapping[Move, Sequence[PlanSlice]] | None = None) -> QueryWise:
        """The same deployment with other `[understanding] moves` (and, given `off_in`, other
        per-slice switches; its other understanding settings kept) and no plan log (an evaluation
        arm is not traffic). It shares the index, the embedder and the LLM provider: close it, then
        this one."""
        understanding = {"moves": list(moves)} | ({} if off_in is None else {"off_in": {m: list(s) for m, s in off_in.items()}})
        settings = self.settings.model_copy(
            update={
                "understanding": self.settings.understanding.model_copy(update=understanding),
                "deployment": self.settings.deployment.model_copy(update={"plan_log": None}),
            }
        )
        tier = self.understander.tier
        provider = tier.provider if tier is not None else self._provider
        arm = QueryWise(settings, self.index, provider=provider, embedder=self.understander.embedder, retriever=self.retriever,
                        reranker=self.reranker, lookups=self.lookups)
        arm.searches_own_index = self.searches_own_index
        return arm

    # --- the online verbs ------------------------------------------------------------------

    def plan(
        self,
        message: str,
        *,
        history: Sequence[str | Turn] = (),
        session: Mapping[str, str] | None = None,
        today: dt.date | None = None,
    ) -> QueryPlan:
        """The query plan for `message` (logged when `[deployment] plan_log` is set)."""
        message, history, session = _clean(message, history, session)
        plan = self.understander.plan(message, history=history, session=session, today=today)
        self._log(plan, history, session)
        return plan

    def ask(
        self,
        message: str,
        *,
        history: Sequence[str | Turn] = (),
        session: Mapping[str, str] | None = None,
        today: dt.date | None = None,
        k: int = 10,
        mode: Mode = "hybrid",
        depth: int = 50,
    ) -> PlanResult:
        """Plan `message` and run the plan: the plan (with its `execute` step) and the fused top `k`."""
        message, history, session = _clean(message, history, session)
        retriever = self._need_retriever("ask")
        tier = self.understander.tier
        if tier is None or not self.settings.llm.overlap:
            plan = self.understander.plan(message, history=history, session=session, today=today)
            result = self._execute(plan, retriever, k=k, mode=mode, depth=depth)
        else:
            result = self._overlapped(retriever, message, history, session, today, k=k, mode=mode, depth=depth)
        self._log(result.plan, history, session)
        return result

    def execute(self, plan: QueryPlan, *, k: int = 10, mode: Mode = "hybrid", depth: int = 50) -> PlanResult:
        """Run a plan made earlier (its filters AND its access constraints) against the retriever."""
        return self._execute(plan, self._need_retriever("execute"), k=k, mode=mode, depth=depth)

    def search(
        self,
        text: str,
        *,
        session: Mapping[str, str] | None = None,
        where: Where | None = None,
        k: int = 10,
        mode: Mode = "hybrid",
    ) -> list[Hit]:
        """Search `text` as typed, no understanding, with `where` AND the session's access constraints
        (`LimitError` for a text over `[limits] max_message_chars`, as for a message)."""
        text, _, session = _clean(text, (), session)
        within_limits(text, (), self.settings.limits)
        access = access_from_session(session or {}, self.settings.access)
        combined = (where or Where()) & access
        return checked(self._need_retriever("search"), text, k=k, where=combined or None, mode=mode).hits

    # --- plumbing ----------------------------------------------------------------------------

    def _check(self, index: Index | None) -> DeploymentCheck:
        """The settings, the catalog and the routes' examples against what the index's chunks carry."""
        classifier = self.understander.router.classifier
        check = check_deployment(
            self.settings,
            catalog=self.understander.catalog,
            routes_with_examples=classifier.labels if classifier is not None else (),
            fields=index.field_presence() if index is not None else None,
        )
        unwired = [Problem(severity="warning", subject=f"routing.routes.{r.name}", message=(
            f"route {r.name!r} names lookup {r.lookup!r}, which this deployment does not wire (QueryWise(..., lookups={{{r.lookup!r}: ...}})): "
            + ("every message it gets falls back to search" if r.falls_back_to_search else "it searches nothing")))
            for r in self.settings.routing.routes if r.lookup is not None and r.lookup not in self.lookups]
        return check.model_copy(update={"problems": (*check.problems, *unwired)}) if unwired else check

    def _execute(self, plan: QueryPlan, retriever: Retriever, *, k: int, mode: Mode, depth: int, prefetched: Prefetched | None = None) -> PlanResult:
        """`execute` with this deployment's fusion constant and reranker."""
        return execute(plan, retriever, k=k, mode=mode, depth=depth, rrf_k=self.settings.index.rrf_k,
                       reranker=self.reranker, rerank_top=self.settings.rerank.top_n, prefetched=prefetched)

    def _reranker(self, settings: Settings) -> Reranker | None:
        """`[rerank]`: a cross-encoder (loads its model on first use), or this deployment's LLM tier."""
        if settings.rerank.kind != "llm":
            return open_reranker(settings.rerank)
        tier = self.understander.tier
        if tier is None:
            raise ValueError("[rerank] kind = 'llm' needs an [llm] provider (or QueryWise(..., provider=...))")
        return LLMReranker(tier, passage_chars=settings.rerank.passage_chars)

    def _need_retriever(self, verb: str) -> Retriever:
        if self.retriever is None:
            raise ValueError(f"{verb} needs an index or a retriever: QueryWise(settings, index), QueryWise.open(config, index_dir) "
                             "or [retriever] in the config")
        return self.retriever

    def _log(self, plan: QueryPlan, history: Sequence[Turn], session: Mapping[str, str] | None) -> None:
        if self.plan_log is not None:
            self.plan_log.append(plan, history=history, session=session)

    def _overlapped(
        self, retriever: Retriever, message: str, history: Sequence[Turn], session: Mapping[str, str] | None, today: dt.date | None,
        *, k: int, mode: Mode, depth: int,
    ) -> PlanResult:
        """Search the raw message while the LLM works; `execute` reuses that search when the plan
        asks exactly it (the message as typed, no filter but the session's access)."""
        access = access_from_session(session or {}, self.settings.access)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="querywise-overlap")
            self._owned.callback(self._pool.shutdown, wait=True)
        # Searched only: a reranker runs once the plan is known (on the plan's route, in the
        # request's LLM deadline), so the speculative search fetches what execute will ask for.
        wide = max(k, self.settings.rerank.top_n) if self.reranker is not None else k
        future: Future[Prefetched] = self._pool.submit(prefetch, retriever, message, k=wide, where=access, mode=mode)
        try:
            plan = self.understander.plan(message, history=history, session=session, today=today)
        except BaseException:
            future.cancel()
            raise
        asks_it = [(q.text, q.kind, q.mode, q.weight) for q in plan.queries] == [(message, "original", None, 1.0)]
        prefetched = future.result() if asks_it else None
        if prefetched is None:
            future.cancel()
        result = self._execute(plan, retriever, k=k, mode=mode, depth=depth, prefetched=prefetched)
        done = result.plan.step("execute")
        if done is not None and done.details.get("prefetched"):
            step = TraceStep(move="overlap", status="ran", reason="the plan searches the raw message: reused the search started before the LLM returned")
        else:
            step = TraceStep(move="overlap", status="skipped", reason="the plan changed the search: the speculative raw-message search was not used")
        return result.model_copy(update={"plan": result.plan.model_copy(update={"trace": [*result.plan.trace, step]})})

    def close(self) -> None:
        """Stop the overlap worker; close the LLM provider this deployment made, the retriever it
        opened and the index `open` opened (never what the caller passed in)."""
        self._owned.close()
        self._pool = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
