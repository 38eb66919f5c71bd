"""`querywise serve`: the HTTP service (server/), and `querywise openapi`: its schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from querywise.cli._app import ConfigOpt, app, err, fail


@app.command("serve")
def serve_cmd(
    config: ConfigOpt = None,
    index: Annotated[Path | None, typer.Option("--index", "-i", help="Index folder (none: plan only, or the [retriever] of the config).")] = None,
    host: Annotated[str | None, typer.Option(help="Address to bind (default: [server] host, 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(min=0, max=65535, help="Port (default: [server] port, 8000).")] = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Worker processes, each with its own copy of the deployment (default: [server] workers).")] = None,
    insecure_no_auth: Annotated[bool, typer.Option("--insecure-no-auth", help="Serve without authentication: every request gets an empty session. For a laptop, never a network.")] = False,
) -> None:
    """Serve the deployment over HTTP (/v1/plan, /v1/ask, /v1/search, /healthz, /readyz, /metrics).
    The session of each request comes from its JWT (or a gateway's signed header), never from its body."""
    from querywise.server import serve

    if insecure_no_auth:
        err.print("[bold red]AUTHENTICATION IS OFF[/] (--insecure-no-auth): every request is served with an empty session.", highlight=False)
    if index is not None and not index.is_dir():
        raise fail(f"--index {index}: no such folder (build it with `querywise index`)")
    try:
        serve(config, index, host=host, port=port, workers=workers, insecure_no_auth=insecure_no_auth)
    except RuntimeError as exc:  # a secret or key that is not there: before anything listens
        raise fail(str(exc)) from None


@app.command("openapi")
def openapi_cmd() -> None:
    """Print the service's OpenAPI schema (schemas/openapi.json is this, committed)."""
    from querywise.server.app import openapi_schema

    sys.stdout.write(json.dumps(openapi_schema(), indent=2, sort_keys=True) + "\n")
