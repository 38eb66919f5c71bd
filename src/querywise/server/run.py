"""Starting the service: the deployment loaded once per worker process, uvicorn serving it.

One worker serves the app built here. Several (`--workers N`) are separate processes that uvicorn
starts from the factory `app_from_env`, each loading its own deployment (model, index, router,
catalog) from the settings named in the environment: their caches (the LLM single-turn cache, the
embedding cache in memory), rate-limit windows and metrics are per worker by design; the jobs are
not: every worker opens the same `[server] jobs_file` (by default `querywise-jobs.sqlite` beside
the labels file), so a job's poll may land on any worker.
Query embeddings go through one `BatchingEmbedder` per worker (`serving_embedder`).
Logs are JSON lines (`JSONFormatter`, the standard library's logging; no extra dependency).
SIGTERM drains: uvicorn stops accepting, and in-flight requests get `[server] graceful_shutdown_s`.
A connection has `[server] request_head_timeout_s` to send each request's head (`protocol.HeadDeadline`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from querywise.config import ServerSettings, Settings, load_settings
from querywise.embed import BatchingEmbedder, CachedEmbedder, embedder_for
from querywise.server.app import create_app
from querywise.server.auth import Authenticator
from querywise.service import QueryWise

__all__ = ["JSONFormatter", "app_from_env", "build_app", "log_config", "running", "serve", "serving_embedder"]

log = logging.getLogger("querywise.server")
ENV_CONFIG, ENV_INDEX, ENV_INSECURE = "QUERYWISE_SERVE_CONFIG", "QUERYWISE_SERVE_INDEX", "QUERYWISE_SERVE_INSECURE_NO_AUTH"
ENV_JOBS = "QUERYWISE_SERVE_JOBS_FILE"
JOBS_FILE = "querywise-jobs.sqlite"  # beside [server] labels_file when several workers need one and none is set
INSECURE_WARNING = "AUTHENTICATION IS OFF (--insecure-no-auth): every request is served with an empty session. Never expose this port."


class JSONFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the record's extra fields."""

    _STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
                                 "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        entry.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def log_config(level: str = "info") -> dict[str, Any]:
    """uvicorn's `log_config`: its logs and querywise's, as JSON lines on stderr."""
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"json": {"()": JSONFormatter}},
        "handlers": {"stderr": handler},
        "loggers": {name: {"handlers": ["stderr"], "level": level.upper(), "propagate": False}
                    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "querywise")},
    }


def build_app(settings: Settings, index: Path | None, *, insecure_no_auth: bool = False) -> FastAPI:
    """The deployment of `settings` and `index` and its app; closing is the app's shutdown."""
    authenticator = None if insecure_no_auth else Authenticator(settings.server, settings.access)  # fails before any model loads
    if insecure_no_auth:
        log.warning(INSECURE_WARNING)
    embedder = serving_embedder(settings)
    from querywise.index import Index

    ix = Index.open(index, settings=settings, embedder=embedder) if index is not None else None
    try:
        deployment = QueryWise(settings, ix, embedder=embedder)
    except BaseException:
        if ix is not None:
            ix.close()
        embedder.close()
        raise
    app = create_app(deployment, authenticator=authenticator, server=settings.server)

    def _close() -> None:
        deployment.close()
        if ix is not None:
            ix.close()
        embedder.close()

    app.router.add_event_handler("shutdown", _close)

    return app


def serving_embedder(settings: Settings) -> BatchingEmbedder:
    """The model `[embedding]` names behind `BatchingEmbedder`: concurrent requests' queries are
    embedded together (bench/results/embed_batching.md), recent ones kept in memory, none written
    to the on-disk cache (it holds corpora, not what users type); the ONNX export is still cached."""
    model = embedder_for(settings)
    if isinstance(model, CachedEmbedder):
        model.close()  # its database; the model it wraps stays
        return BatchingEmbedder(model.inner)
    return BatchingEmbedder(model)


@contextmanager
def running(app: FastAPI, *, host: str = "127.0.0.1", start_timeout_s: float = 30.0) -> Iterator[str]:
    """Serve `app` with uvicorn in a thread on an ephemeral port of `host` (tests, benches, a
    notebook); yields its base URL, and stops it (draining) on exit."""
    import uvicorn

    from querywise.server.protocol import head_deadline

    head_s = getattr(app.state, "request_head_timeout_s", ServerSettings().request_head_timeout_s)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning", lifespan="on", http=head_deadline(head_s)))
    thread = threading.Thread(target=server.run, name="querywise-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=start_timeout_s)


def app_from_env() -> FastAPI:
    """The factory each worker process calls (`uvicorn querywise.server.run:app_from_env --factory`)."""
    config, index = os.environ.get(ENV_CONFIG) or None, os.environ.get(ENV_INDEX) or None
    settings = load_settings(config)
    if jobs := os.environ.get(ENV_JOBS):  # the one file every worker shares, as `serve` chose it
        settings = settings.model_copy(update={"server": settings.server.model_copy(update={"jobs_file": Path(jobs)})})
    return build_app(settings, Path(index) if index else None, insecure_no_auth=os.environ.get(ENV_INSECURE) == "1")


def serve(config: Path | None, index: Path | None, *, host: str | None = None, port: int | None = None, workers: int | None = None,
          insecure_no_auth: bool = False) -> None:
    """Run the service until SIGINT / SIGTERM (which drain in-flight requests)."""
    import uvicorn

    from querywise.server.protocol import head_deadline

    settings = load_settings(config)
    s = settings.server
    options: dict[str, Any] = {"host": host or s.host, "port": s.port if port is None else port, "log_config": log_config(),
                               "timeout_graceful_shutdown": s.graceful_shutdown_s, "proxy_headers": False,
                               "http": head_deadline(s.request_head_timeout_s)}
    n = workers or s.workers
    if n == 1:
        uvicorn.run(build_app(settings, index, insecure_no_auth=insecure_no_auth), **options)
        return
    os.environ[ENV_CONFIG] = str(config.resolve()) if config is not None else ""
    os.environ[ENV_INDEX] = str(index.resolve()) if index is not None else ""
    os.environ[ENV_INSECURE] = "1" if insecure_no_auth else "0"
    os.environ[ENV_JOBS] = str((s.jobs_file or s.labels_file.parent / JOBS_FILE).resolve())
    if insecure_no_auth:
        log.warning(INSECURE_WARNING)
    uvicorn.run("querywise.server.run:app_from_env", factory=True, workers=n, **options)
