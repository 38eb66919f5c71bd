"""The HTTP service: one `QueryWise` deployment behind FastAPI, loaded once at start-up.

    POST /v1/plan    {message, history, today}        -> {plan}
    POST /v1/ask     {message, history, today, k, mode} -> {plan, hits, empty_because, relaxed}
    POST /v1/search  {text, k, mode, filters}          -> {hits}
    POST /v1/triage, /v1/eval {rows, options}          -> 202 {job};  GET /v1/jobs/{id}  its progress, result
    GET  /healthz    live;  GET /readyz  the deployment loaded;  GET /metrics  Prometheus

Every `/v1` request is authenticated first (`server.auth`: the session comes from the verified
credentials, never from the body; 401 without them), then rate-limited per subject (429 with
Retry-After), and bounded: a body over `[server] max_body_bytes` is 413 before it is read, one
not all in within `request_body_timeout_s` of its head is 408, a message or turn over `[limits]`
is 413 too. The deployment's own errors map to statuses: an
unusable session 403, a bad filter or history 422, the user's retriever failing 502. The
handlers are async and hand the deployment's sync work to a pool of `REQUEST_THREADS` threads:
the embedding model and the LLM tier are shared by the requests in flight (the tier keeps one
deadline per request per thread); everything else (auth, limits, metrics) stays on the event loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.middleware.trustedhost import TrustedHostMiddleware

from querywise.config import ServerSettings
from querywise.execute import PlanResult
from querywise.files import InputError
from querywise.plan import QueryPlan
from querywise.retrieve import RetrieverError
from querywise.server import workbench
from querywise.server.auth import Authenticator, Principal
from querywise.server.guard import Guard, RefusedError, Who
from querywise.server.jobs import Job, JobQueueFull, Jobs, Progress
from querywise.server.metrics import CONTENT_TYPE, ServiceMetrics
from querywise.server.schemas import (
    AskRequest,
    AskResponse,
    ErrorBody,
    EvalJobRequest,
    PlanRequest,
    PlanResponse,
    SearchRequest,
    SearchResponse,
    TriageJobRequest,
    reject_access_fields,
)
from querywise.server.work import run_eval, run_triage
from querywise.service import QueryWise
from querywise.understand.access import AccessError
from querywise.understand.limits import LimitError

__all__ = ["API_VERSION", "create_app", "openapi_schema", "router"]

API_VERSION = "1"
log = logging.getLogger("querywise.server")
# Threads for the deployment's sync work (a plan waits on the embedding batch or the LLM tier):
# as many as anyio's default pool, which a sync endpoint would have used; the standard library's
# executor hands work over more cheaply (bench/results/service_load.md).
REQUEST_THREADS = 40

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BodyLimit:
    """413 for a body over `limit` bytes: by its Content-Length before anything is read, or by
    counting a chunked body as it arrives; 408 for a body not all in within `timeout_s` of the
    request's head (a client trickling its body would hold the request for good: the head's
    deadline, `protocol.HeadDeadline`, ends where the body starts). Pure ASGI, so no body is
    buffered twice."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float = 60.0) -> None:
        self.app, self.limit, self.timeout_s = app, limit, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await _refuse(send, 413, "too_large", f"the request body is over {self.limit} bytes ([server] max_body_bytes)")
            return
        seen, refused, body_done = 0, False, False
        deadline = asyncio.get_running_loop().time() + self.timeout_s

        # Over the limit or past the deadline mid-body: answer at once, tell the app the client left
        # (so it stops reading), and drop whatever it sends after (FastAPI would have made a 400 of
        # an error). Once the body is in, a receive() waits for the client to leave: no deadline.
        async def counted() -> Message:
            nonlocal seen, refused, body_done
            if refused:
                return {"type": "http.disconnect"}
            if body_done:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - asyncio.get_running_loop().time()))
            except TimeoutError:
                refused = True
                await _refuse(send, 408, "request_timeout", f"the request body did not arrive within {self.timeout_s:g} s "
                              "([server] request_body_timeout_s)")
                return {"type": "http.disconnect"}
            seen += len(message.get("body", b""))
            body_done = message["type"] != "http.request" or not message.get("more_body", False)
            if seen > self.limit:
                refused = True
                await _refuse(send, 413, "too_large", f"the request body is over {self.limit} bytes ([server] max_body_bytes)")
                return {"type": "http.disconnect"}
            return message

        async def unless_refused(message: Message) -> None:
            if not refused:
                await send(message)

        try:
            await self.app(scope, counted, unless_refused)
        except Exception:
            if not refused:
                raise


class Timed:
    """Each request's latency and status into the metrics, by the route that served it. Pure ASGI:
    Starlette's `BaseHTTPMiddleware` runs the app in a task of its own and streams the response
    through a queue, which cost more than the plan itself (bench/results/service_load.md)."""

    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def noted(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, noted)
        finally:  # the router put the matched route into this same scope
            self.metrics.observe(getattr(scope.get("route"), "path", "(unmatched)"), status, time.perf_counter() - started)


async def _refuse(send: Send, status: int, error: str, detail: str) -> None:
    body = json.dumps({"error": error, "detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 408:  # the rest of the body may still come: this connection is done
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class _Served:
    """What the handlers serve: the deployment, its metrics, the session keys a body may not name."""

    deployment: QueryWise
    metrics: ServiceMetrics
    session_keys: frozenset[str]
    jobs: Jobs
    jobs_scope: str
    threads: ThreadPoolExecutor

    async def run(self, fn: Callable[[], Any]) -> Any:
        """`fn()` in a worker thread, with the deployment's errors as the statuses they mean."""
        try:
            context = contextvars.copy_context()  # the request's context variables (tracing...) go with it, as anyio's would
            return await asyncio.get_running_loop().run_in_executor(self.threads, context.run, fn)
        except LimitError as exc:
            raise RefusedError(413, "too_large", str(exc)) from None
        except AccessError as exc:
            raise RefusedError(403, "forbidden", f"the credentials' session cannot be searched with: {exc}") from None
        except RetrieverError as exc:
            raise RefusedError(502, "retriever_failed", str(exc)) from None
        except (InputError, ValueError) as exc:
            raise RefusedError(422, "invalid_request", str(exc)) from None

    def check(self, body: PlanRequest | SearchRequest) -> None:
        try:  # the deployment's own session keys ("market"...), refused like "session" itself
            reject_access_fields(body.model_dump(exclude_unset=True), self.session_keys)
        except ValueError as exc:
            raise RefusedError(422, "invalid_request", str(exc)) from None


async def _served(request: Request) -> _Served:
    served: _Served = request.app.state.served
    return served


Served = Annotated[_Served, Depends(_served)]
router = APIRouter()


@router.post("/v1/plan", response_model=PlanResponse, tags=["understand"])
async def plan(body: PlanRequest, who: Who, served: Served) -> PlanResponse:
    """The query plan for a message and its conversation (nothing is searched)."""
    served.check(body)
    made: QueryPlan = await served.run(lambda: served.deployment.plan(body.message, history=body.history, session=who.session, today=body.today))
    served.metrics.observe_plan(made)
    return PlanResponse(plan=made)


@router.post("/v1/ask", response_model=AskResponse, tags=["understand"])
async def ask(body: AskRequest, who: Who, served: Served) -> AskResponse:
    """Plan the message and run the plan: the plan (with its execute step) and the fused top k."""
    served.check(body)
    result: PlanResult = await served.run(lambda: served.deployment.ask(body.message, history=body.history, session=who.session, today=body.today,
                                                                  k=body.k, mode=body.mode))
    served.metrics.observe_plan(result.plan)
    return AskResponse(plan=result.plan, hits=result.hits, empty_because=result.empty_because, relaxed=result.relaxed)


@router.post("/v1/search", response_model=SearchResponse, tags=["retrieve"])
async def search(body: SearchRequest, who: Who, served: Served) -> SearchResponse:
    """Search the text as typed, no understanding, with the filters AND the credentials' access."""
    served.check(body)
    return SearchResponse(hits=await served.run(lambda: served.deployment.search(body.text, session=who.session, where=body.filters, k=body.k,
                                                                           mode=body.mode)))


def _start(served: _Served, who: Principal, kind: Literal["triage", "eval"], fn: Callable[[Progress], dict[str, Any]]) -> JSONResponse:
    if served.jobs_scope not in who.scopes:
        raise RefusedError(403, "forbidden", f"{kind} jobs need the {served.jobs_scope!r} scope in the credentials ([server] jobs_scope): "
                            "they read passages whatever the session may see")
    try:
        job = served.jobs.submit(kind, who.subject, fn)
    except JobQueueFull as exc:
        raise RefusedError(429, "too_many_jobs", str(exc), {"Retry-After": "10"}) from None
    return JSONResponse(job.model_dump(mode="json"), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})


@router.post("/v1/triage", status_code=202, response_model=Job, tags=["diagnose"])
def triage(body: TriageJobRequest, who: Who, served: Served) -> JSONResponse:
    """Start a triage of failures (the rows `eval --failures` writes) through the served deployment."""
    return _start(served, who, "triage", lambda progress: run_triage(served.deployment, body, progress))


@router.post("/v1/eval", status_code=202, response_model=Job, tags=["diagnose"])
def evaluation(body: EvalJobRequest, who: Who, served: Served) -> JSONResponse:
    """Start an evaluation of labelled cases (as `eval` reads them; each case's session is its own)."""
    return _start(served, who, "eval", lambda progress: run_eval(served.deployment, body, progress))


@router.get("/v1/jobs/{job_id}", response_model=Job, tags=["diagnose"])
def job(job_id: str, who: Who, served: Served) -> Job:
    """A job's status and progress, and its result (the report JSON) once done; only its starter sees it."""
    found = served.jobs.get(job_id, who.subject)
    if found is None:
        raise RefusedError(404, "not_found", f"no job {job_id!r} of yours")
    return found


@router.get("/healthz", tags=["operations"])
def healthz() -> dict[str, str]:
    """Live: the process answers."""
    return {"status": "ok"}


@router.get("/readyz", tags=["operations"])
def readyz(served: Served) -> JSONResponse:
    """Ready: the deployment (model, index or retriever, router, catalog) is loaded."""
    d = served.deployment
    ready = d.retriever is not None or d.index is None
    body = {"status": "ready" if ready else "not_ready", "index": d.index is not None,
            "retriever": getattr(d.retriever, "name", None), "llm": d.understander.tier is not None}
    return JSONResponse(body, status_code=200 if ready else 503)


@router.get("/metrics", tags=["operations"])
def prometheus(served: Served) -> Response:
    """Prometheus text format: requests, latencies per route and move, the LLM tier's counters."""
    return Response(served.metrics.render(), media_type=CONTENT_TYPE)


def _api() -> FastAPI:
    # 413 and 422 are described here: FastAPI takes the phrase from http.HTTPStatus otherwise, which
    # Python 3.13 renamed (RFC 9110: "Content Too Large", "Unprocessable Content"), and the schema
    # integrators generate clients from would depend on the interpreter that served it.
    app = FastAPI(title="querywise", version=API_VERSION, summary="Query understanding and retrieval diagnosis",
                  responses={401: {"model": ErrorBody}, 413: {"model": ErrorBody, "description": "Request Entity Too Large"},
                             422: {"model": ErrorBody, "description": "Unprocessable Entity"}, 429: {"model": ErrorBody}})
    app.include_router(router)

    @app.exception_handler(RefusedError)
    async def refused(request: Request, exc: RefusedError) -> JSONResponse:
        return JSONResponse({"error": exc.error, "detail": exc.detail}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"error": "invalid_request", "detail": problems}, status_code=422)

    return app


def openapi_schema() -> dict[str, Any]:
    """The API's OpenAPI schema (the same for every deployment)."""
    return _api().openapi()


def create_app(deployment: QueryWise, *, authenticator: Authenticator | None, server: ServerSettings | None = None) -> FastAPI:
    """The service of `deployment`. `authenticator` None serves without authentication (only
    `querywise serve --insecure-no-auth` does that, and logs it): every request is then the
    anonymous principal with an empty session."""
    server = server or deployment.settings.server
    metrics = ServiceMetrics(deployment)
    app = _api()
    jobs = Jobs(max_queued=server.max_queued_jobs, path=server.jobs_file)
    threads = ThreadPoolExecutor(max_workers=REQUEST_THREADS, thread_name_prefix="querywise-request")
    app.state.request_head_timeout_s = server.request_head_timeout_s  # for `running`, which serves the app without its settings
    app.state.served = _Served(deployment, metrics, frozenset(deployment.settings.access.fields), jobs, server.jobs_scope, threads)
    app.router.add_event_handler("startup", jobs.open)
    app.router.add_event_handler("shutdown", jobs.close)
    app.router.add_event_handler("shutdown", threads.shutdown)
    if authenticator is None and "*" in server.allowed_hosts:
        raise ValueError("--insecure-no-auth with [server] allowed_hosts = ['*']: any web page could reach the service through DNS rebinding")
    app.state.guard = Guard(authenticator, server.rate_limit, storage=server.rate_limit_storage, insecure_scopes=frozenset({server.jobs_scope}),
                            failure_limit=server.auth_failure_limit)
    workbench.install(app, deployment, jobs, server.labels_file, server.jobs_scope)

    app.add_middleware(Timed, metrics=metrics)
    app.add_middleware(BodyLimit, limit=server.max_body_bytes, timeout_s=server.request_body_timeout_s)
    # Outermost: a request for another Host (DNS rebinding) is 400 before anything reads it.
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=server.allowed_hosts, www_redirect=False)
    return app
