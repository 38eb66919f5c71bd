"""The workbench's routes: pages rendered from the templates, and the few JSON calls the page
script makes that the `/v1` API has no place for (sign-in, labels, opening a saved report)."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from pydantic import BaseModel, Field, ValidationError

from querywise.conversation import Turn
from querywise.evaluation.compare import compare_runs
from querywise.evaluation.result import EvalResult, slice_intervals
from querywise.server.auth import Principal
from querywise.server.guard import UI_COOKIE, Guard, RefusedError
from querywise.server.jobs import Job, Jobs
from querywise.service import QueryWise
from querywise.triage import BUCKETS, REPAIR, Bucket, ChunkTable, TriageReport
from querywise.triage.buckets import QUERY_BUCKETS
from querywise.triage.failures import QUERY_DEFECT_KINDS, QueryDefectKind
from querywise.triage.html import bucket_chart, triage_html
from querywise.triage.labels import Agreement, Label, LabelError, LabelStore, relabel

__all__ = ["Workbench", "install"]

_ENV = Environment(loader=PackageLoader("querywise.server.workbench", "templates"), autoescape=select_autoescape(), trim_blocks=True,
                   lstrip_blocks=True)  # fmt: skip
_TEMPLATES = Jinja2Templates(env=_ENV)
router = APIRouter(include_in_schema=False)


class Workbench:
    """What the pages read besides the deployment: the labels file and the index's chunks (read
    once, on the first case page: a triage reads them whole too)."""

    def __init__(self, deployment: QueryWise, jobs: Jobs, labels: LabelStore, jobs_scope: str) -> None:
        self.deployment, self.jobs, self.labels, self.jobs_scope = deployment, jobs, labels, jobs_scope
        self._table: ChunkTable | None = None
        self._lock = threading.Lock()

    def table(self) -> ChunkTable | None:
        if self.deployment.index is None:
            return None
        with self._lock:
            if self._table is None:
                self._table = ChunkTable.of(self.deployment.index.chunks())
            return self._table


class _SignInFirst(Exception):  # noqa: N818 (a redirect, not an error)
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


async def _viewer(request: Request) -> Principal:
    guard: Guard = request.app.state.guard
    try:
        return guard.principal(request)
    except RefusedError as exc:
        if exc.status == 401 and request.method == "GET":  # a page: to the sign-in form; a call: the 401 itself
            raise _SignInFirst(request.url.path + (f"?{request.url.query}" if request.url.query else "")) from None
        raise


async def _bench(request: Request) -> Workbench:
    bench: Workbench = request.app.state.workbench
    return bench


Viewer = Annotated[Principal, Depends(_viewer)]
Bench = Annotated[Workbench, Depends(_bench)]
# Handlers that read or write the labels file, read the index's chunks or recount a report are
# sync (FastAPI runs them in its thread pool): a save waiting on another worker's file lock must
# not hold this worker's event loop, which serves the API too.


def _page(request: Request, name: str, who: Principal | None, status: int = 200, **context: Any) -> HTMLResponse:
    guard: Guard = request.app.state.guard
    return _TEMPLATES.TemplateResponse(request, name, {"who": who, "insecure": guard.authenticator is None, **context}, status_code=status)


def _operator(request: Request, who: Principal, bench: Workbench) -> HTMLResponse | None:
    """The refusal page for credentials without the jobs grant, else None."""
    if bench.jobs_scope in who.scopes:
        return None
    return _page(request, "refused.html", who, 403, detail=f"triage and evaluation need the {bench.jobs_scope!r} scope in the credentials "
                 "([server] jobs_scope): they read passages whatever a session may see")


def _job(bench: Workbench, who: Principal, job_id: str, kind: str) -> Job:
    job = bench.jobs.get(job_id, who.subject)
    if job is None or job.kind != kind:
        raise RefusedError(404, "not_found", f"no {kind} job {job_id!r} of yours")
    return job


# --- signing in -------------------------------------------------------------------------


class _SignIn(BaseModel):
    token: str = Field(min_length=1, max_length=16_384)


@router.get("/ui/signin", response_class=HTMLResponse)
async def signin_page(request: Request, next: str = "/") -> HTMLResponse:
    return _page(request, "signin.html", None, next=local_path(next))


# A path on this origin: printable ASCII without a backslash (browsers read "\\" as "/"), not
# "//" (another host). Whitespace and control characters are refused, not stripped: browsers drop
# a TAB or a newline inside a URL, so "/\t/evil.example" would become "//evil.example".
_LOCAL_PATH = re.compile(r"/(?!/)[\x21-\x5b\x5d-\x7e]*")
_ENCODED_TRICK = re.compile(r"%(?:5c|2f|[01][0-9a-f]|7f|20)", re.IGNORECASE)  # still encoded: a later decode must not make one


def local_path(next: str) -> str:
    """`next` when it is a path of this origin, else "/" (the redirect after sign-in)."""
    return next if _LOCAL_PATH.fullmatch(next) and not _ENCODED_TRICK.search(next) else "/"


@router.post("/ui/signin")
async def signin(request: Request, body: _SignIn) -> Response:
    guard: Guard = request.app.state.guard
    who = guard.verify({"authorization": f"Bearer {body.token.strip()}"})
    response = JSONResponse({"subject": who.subject, "session": who.session, "scopes": sorted(who.scopes)})
    if guard.authenticator is not None:
        response.set_cookie(UI_COOKIE, body.token.strip(), httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/")
    return response


@router.post("/ui/signout")
async def signout(request: Request) -> Response:
    response = Response(status_code=204)
    response.delete_cookie(UI_COOKIE, path="/")
    return response


@router.get("/", response_class=HTMLResponse)
async def home(request: Request, who: Viewer, bench: Bench) -> HTMLResponse:
    return _page(request, "home.html", who, operator=bench.jobs_scope in who.scopes, labels_file=str(bench.labels.path.resolve()),
                 index=bench.deployment.index is not None)


# --- triage -----------------------------------------------------------------------------


@router.get("/triage", response_class=HTMLResponse)
def triage_list(request: Request, who: Viewer, bench: Bench) -> HTMLResponse:
    if (refused := _operator(request, who, bench)) is not None:
        return refused
    jobs = [j for j in bench.jobs.mine(who.subject) if j.kind == "triage"]
    return _page(request, "triage_list.html", who, jobs=jobs, index=bench.deployment.index is not None)


class _Opened(BaseModel):
    report: dict[str, Any]


@router.post("/ui/reports")
def open_report(request: Request, who: Viewer, bench: Bench, body: _Opened) -> JSONResponse:
    """A report saved with `querywise triage --json`, opened as a finished job."""
    _require_ui(who, bench)
    try:
        relabel(body.report, {})
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise RefusedError(422, "invalid_request", f"not a `querywise triage --json` report: {exc}"[:500]) from None
    job = bench.jobs.add("triage", who.subject, body.report)
    return JSONResponse({"id": job.id, "location": f"/triage/{job.id}"}, status_code=201)


def _require_ui(who: Principal, bench: Workbench) -> None:
    if bench.jobs_scope not in who.scopes:
        raise RefusedError(403, "forbidden", f"this needs the {bench.jobs_scope!r} scope in the credentials ([server] jobs_scope)")


def _report(bench: Workbench, job: Job) -> tuple[TriageReport, Agreement, dict[str, Label]]:
    assert job.result is not None
    labels = bench.labels.all()
    report, agreement = relabel(job.result, labels)
    return report, agreement, labels


@router.get("/triage/{job_id}", response_class=HTMLResponse)
def triage_view(request: Request, job_id: str, who: Viewer, bench: Bench, bucket: str | None = None) -> HTMLResponse:
    if (refused := _operator(request, who, bench)) is not None:
        return refused
    job = _job(bench, who, job_id, "triage")
    if job.status != "done":
        return _page(request, "triage_running.html", who, job=job)
    report, agreement, labels = _report(bench, job)
    shown = [c for c in report.cases if bucket is None or c.bucket == bucket]
    chart = Markup(bucket_chart(report, href=lambda b: f"/triage/{job.id}?bucket={quote(b)}#cases"))
    return _page(request, "triage_report.html", who, job=job, report=report, agreement=agreement, labels=labels, cases=shown, bucket=bucket,
                 buckets=BUCKETS, repair=REPAIR, chart=chart)


@router.get("/triage/{job_id}/case/{case_id}", response_class=HTMLResponse)
def case_view(request: Request, job_id: str, case_id: str, who: Viewer, bench: Bench, bucket: str | None = None) -> HTMLResponse:
    if (refused := _operator(request, who, bench)) is not None:
        return refused
    job = _job(bench, who, job_id, "triage")
    if job.status != "done":
        return RedirectResponse(f"/triage/{job.id}", status_code=303)  # type: ignore[return-value]
    report, agreement, labels = _report(bench, job)
    ids = [c.id for c in report.cases if bucket is None or c.bucket == bucket]
    found = next((c for c in report.cases if c.id == case_id), None)
    if found is None:
        raise RefusedError(404, "not_found", f"no case {case_id!r} in {job.id}")
    at = ids.index(case_id) if case_id in ids else None
    nav = {"previous": ids[at - 1] if at else None, "next": ids[at + 1] if at is not None and at + 1 < len(ids) else None,
           "position": (at + 1) if at is not None else None, "of": len(ids)}
    return _page(request, "triage_case.html", who, job=job, report=report, case=found, label=labels.get(case_id),
                 detectors=agreement.detectors.get(case_id), passages=_passages(bench, found), nav=nav, bucket=bucket,
                 kinds=QUERY_DEFECT_KINDS, buckets=BUCKETS, query_buckets=QUERY_BUCKETS, history=_turns(found.history))


def _turns(history: Sequence[Turn]) -> list[dict[str, str]]:
    return [{"role": t.role, "text": t.text} for t in history]


def _passages(bench: Workbench, case: Any) -> list[dict[str, Any]]:
    """The gold's chunks and their neighbours in document order, each cut into (text, is gold)
    runs: the gold text where the failures file gave it, else the whole gold chunk."""
    table = bench.table()
    loc = case.evidence.location
    if table is None or loc.absent or (not loc.chunk_ids and not loc.chunk_id):
        return []
    gold_ids = [i for i in (loc.chunk_ids or [loc.chunk_id]) if i in table.chunks]
    if not gold_ids:
        return []
    doc = table.by_doc.get(table.chunks[gold_ids[0]].doc_id, gold_ids)
    first, last = doc.index(gold_ids[0]) if gold_ids[0] in doc else 0, doc.index(gold_ids[-1]) if gold_ids[-1] in doc else len(doc) - 1
    shown = doc[max(0, first - 1) : last + 2]
    out = []
    for cid in shown:
        text = table.chunks[cid].text
        gold = cid in gold_ids
        runs = _highlight(text, case.gold_text) if gold and case.gold_text else [(text, gold)]
        out.append({"id": cid, "gold": gold, "runs": runs, "title": table.chunks[cid].title})
    return out


def _highlight(text: str, gold: str) -> list[tuple[str, bool]]:
    """`text` cut around the part of `gold` it holds (whitespace-insensitive): the whole gold, or
    for a gold that crosses chunks the longest run of its opening or closing words found here."""
    words = gold.split()
    for n in range(len(words), min(3, len(words)) - 1, -1):  # a run of fewer than 3 words marks nothing
        for part in (words[:n], words[-n:]):
            m = re.search(r"\s+".join(re.escape(w) for w in part), text)
            if m:
                return [(text[: m.start()], False), (m.group(0), True), (text[m.end() :], False)]
    return [(text, True)]


class _LabelBody(BaseModel):
    case_id: str = Field(min_length=1)
    label: QueryDefectKind | None = None
    bucket: Bucket | None = None
    note: str = Field("", max_length=2000)


@router.post("/ui/labels/{job_id}")
def save_label(request: Request, job_id: str, body: _LabelBody, who: Viewer, bench: Bench) -> JSONResponse:
    _require_ui(who, bench)
    job = _job(bench, who, job_id, "triage")
    if job.result is None or all(c.get("id") != body.case_id for c in job.result.get("cases", [])):
        raise RefusedError(404, "not_found", f"no case {body.case_id!r} in {job.id}")
    try:
        label = Label(id=body.case_id, label=body.label, bucket=body.bucket, note=body.note.strip(), by=who.subject)
    except ValidationError as exc:
        raise RefusedError(422, "invalid_request", exc.errors()[0]["msg"]) from None
    try:
        bench.labels.save(label)
    except LabelError as exc:
        raise _refused(exc) from None
    return _summary(bench, job, body.case_id)


@router.delete("/ui/labels/{job_id}/{case_id}")
def remove_label(request: Request, job_id: str, case_id: str, who: Viewer, bench: Bench) -> JSONResponse:
    _require_ui(who, bench)
    job = _job(bench, who, job_id, "triage")
    if job.result is None or all(c.get("id") != case_id for c in job.result.get("cases", [])):
        raise RefusedError(404, "not_found", f"no case {case_id!r} in {job.id}")
    try:
        bench.labels.remove(case_id, who.subject)
    except LabelError as exc:
        raise _refused(exc) from None
    return _summary(bench, job, case_id)


def _refused(exc: LabelError) -> RefusedError:
    status, error = {"owner": (403, "forbidden"), "bad_rows": (409, "conflict"), "unwritable": (503, "unavailable")}[exc.why]
    return RefusedError(status, error, str(exc))


def _summary(bench: Workbench, job: Job, case_id: str) -> JSONResponse:
    report, agreement, labels = _report(bench, job)
    case = next(c for c in report.cases if c.id == case_id)
    said = labels.get(case_id)
    return JSONResponse({"case": case_id, "bucket": case.bucket, "source": case.evidence.label_source, "reason": case.evidence.reason,
                         "label": said.model_dump(mode="json") if said else None, "buckets": report.buckets,
                         "agreement": agreement.model_dump(exclude={"detectors"})})


@router.get("/triage/{job_id}/export.json")
def export_json(job_id: str, who: Viewer, bench: Bench) -> JSONResponse:
    _require_ui(who, bench)
    job = _job(bench, who, job_id, "triage")
    report, agreement, labels = _report(bench, job)
    body = {**report.to_json(), "labels": [v.model_dump(mode="json", exclude_none=True) for k, v in labels.items()
                                          if any(c.id == k for c in report.cases)],
            "agreement": agreement.model_dump()}
    return JSONResponse(body, headers={"Content-Disposition": f'attachment; filename="{job.id}.json"'})


@router.get("/triage/{job_id}/export.html", response_class=HTMLResponse)
def export_html(job_id: str, who: Viewer, bench: Bench) -> HTMLResponse:
    _require_ui(who, bench)
    job = _job(bench, who, job_id, "triage")
    report, agreement, _ = _report(bench, job)
    title = f"Failure triage {job.id} (labelled: {agreement.labelled}, detectors agree on {agreement.agreed})"
    return HTMLResponse(triage_html(report, title=title), headers={"Content-Disposition": f'attachment; filename="{job.id}.html"'})


# --- evaluation -------------------------------------------------------------------------


@router.get("/eval", response_class=HTMLResponse)
def eval_list(request: Request, who: Viewer, bench: Bench) -> HTMLResponse:
    if (refused := _operator(request, who, bench)) is not None:
        return refused
    jobs = [j for j in bench.jobs.mine(who.subject) if j.kind == "eval"]
    return _page(request, "eval_list.html", who, jobs=jobs)


@router.post("/ui/runs")
def open_run(request: Request, who: Viewer, bench: Bench, body: _Opened) -> JSONResponse:
    """A run saved with `querywise eval --json`, opened as a finished job."""
    _require_ui(who, bench)
    try:
        EvalResult.model_validate(body.report)
    except ValidationError as exc:
        raise RefusedError(422, "invalid_request", f"not a `querywise eval --json` run: {exc.errors()[0]['msg']}") from None
    job = bench.jobs.add("eval", who.subject, body.report)
    return JSONResponse({"id": job.id, "location": f"/eval/{job.id}"}, status_code=201)


@router.get("/eval/{job_id}", response_class=HTMLResponse)
def eval_view(request: Request, job_id: str, who: Viewer, bench: Bench, against: str | None = None) -> HTMLResponse:
    if (refused := _operator(request, who, bench)) is not None:
        return refused
    job = _job(bench, who, job_id, "eval")
    if job.status != "done" or job.result is None:
        return _page(request, "triage_running.html", who, job=job)
    run = EvalResult.model_validate(job.result)
    others = [j for j in bench.jobs.mine(who.subject) if j.kind == "eval" and j.status == "done" and j.id != job.id]
    comparison = None
    if against:
        base = _job(bench, who, against, "eval")
        if base.result is not None:
            comparison = compare_runs(EvalResult.model_validate(base.result), run)
    return _page(request, "eval_report.html", who, job=job, run=run, others=others, against=against, comparison=comparison,
                 intervals=slice_intervals(run))


# --- the plan inspector -----------------------------------------------------------------


@router.get("/plan", response_class=HTMLResponse)
async def plan_inspector(request: Request, who: Viewer, bench: Bench) -> HTMLResponse:
    return _page(request, "plan.html", who, index=bench.deployment.index is not None, session=who.session)


def install(app: FastAPI, deployment: QueryWise, jobs: Jobs, labels_file: Path, jobs_scope: str) -> None:
    """The workbench's routes, static files and sign-in redirect on `app`."""
    app.state.workbench = Workbench(deployment, jobs, LabelStore(labels_file), jobs_scope)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=str(resources.files("querywise.server.workbench") / "static")), name="static")

    @app.exception_handler(_SignInFirst)
    async def sign_in_first(request: Request, exc: _SignInFirst) -> RedirectResponse:
        return RedirectResponse(f"/ui/signin?next={quote(exc.path)}", status_code=303)

