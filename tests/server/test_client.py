"""`querywise.Client` against the real service, and the API's committed schema."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from shop_deployment import shop_settings

from querywise import Client
from querywise.client import ServiceError
from querywise.conditions import parse_where
from querywise.config import ServerSettings
from querywise.corpus import Chunk
from querywise.index import build_index
from querywise.server import Authenticator, create_app, running
from querywise.server.app import openapi_schema
from querywise.service import QueryWise

SCHEMA = Path(__file__).parents[2] / "schemas" / "openapi.json"


@pytest.fixture
def url(tmp_path: Path, shop: list[Chunk], hash_embedder: Any, jwt_secret: str) -> Iterator[str]:
    settings = shop_settings(tmp_path).model_copy(update={"server": ServerSettings(rate_limit=None)})
    with (build_index(shop, tmp_path / "ix", settings=settings, embedder=hash_embedder) as ix, QueryWise(settings, ix) as qw,
          running(create_app(qw, authenticator=Authenticator(settings.server, settings.access))) as base):
        yield base


def test_the_client_plans_asks_and_searches_as_the_library_does(url: str, token: Callable[..., str]) -> None:
    with Client(url, token=token(market="eu")) as qw:
        assert qw.ready()
        plan = qw.plan("and the Pro?", history=["how long is the warranty on the Vela X3?"])
        assert plan.queries[0].kind == "standalone" and plan.access.conditions[0].field == "markets"
        answer = qw.ask("Pico Buds battery", k=3)
        assert 0 < len(answer.hits) <= 3 and answer.plan.step("execute") is not None
        hits = qw.search("warranty", k=5, filters=parse_where(["markets=us"]))
        assert hits and all({"eu", "us"} <= set(h.payload["markets"]) for h in hits)


def test_errors_carry_the_status_and_the_reason(url: str, token: Callable[..., str]) -> None:
    with Client(url) as anonymous, pytest.raises(ServiceError) as info:
        anonymous.plan("warranty")
    assert info.value.status == 401 and "bearer" in info.value.detail.lower()
    with Client(url, token=token(market="eu")) as qw, pytest.raises(ServiceError) as info:
        qw.ask("warranty", k=1000)
    assert info.value.status == 422 and "k" in info.value.detail


def test_the_committed_openapi_schema_is_the_apis() -> None:
    """schemas/openapi.json is what integrators generate clients from; regenerate it with
    `querywise openapi > schemas/openapi.json` when the API changes."""
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == json.loads(json.dumps(openapi_schema())), "run: querywise openapi > schemas/openapi.json"
    paths = openapi_schema()["paths"]
    assert set(paths) == {"/v1/plan", "/v1/ask", "/v1/search", "/v1/triage", "/v1/eval", "/v1/jobs/{job_id}", "/healthz", "/readyz", "/metrics"}
    for path in ("/v1/plan", "/v1/ask", "/v1/search", "/v1/triage", "/v1/eval"):
        body = paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
        assert "session" not in openapi_schema()["components"]["schemas"][body]["properties"]  # the body has no place for access
