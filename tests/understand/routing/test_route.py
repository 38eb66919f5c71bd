"""The routing cascade's mechanics, on hand-made vectors where geometry is the point."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
import pytest

from querywise.config import IdentifierRule, RouteSpec, RoutingSettings
from querywise.understand.routing.route import Router, load_examples


class AxisEmbedder:
    """Each known word points along its own axis; a text is the normalised sum."""

    model_id, dim = "axis/test", 8
    AXES: ClassVar[dict[str, int]] = {"order": 0, "parcel": 0, "refund": 1, "pair": 2, "bluetooth": 2, "warranty": 3, "joke": 4, "weather": 4}

    def embed(self, texts: Sequence[str], *, on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, self.AXES.get(w.strip("?"), 7)] += 1.0
            out[i] /= np.linalg.norm(out[i])
        return out


def _routing(**kw) -> RoutingSettings:  # type: ignore[no-untyped-def]
    return RoutingSettings(
        routes=[
            RouteSpec(name="account", examples=["order", "parcel", "refund"]),
            RouteSpec(name="kb_search", examples=["pair bluetooth", "warranty"], search=True),
            RouteSpec(name="out_of_scope", examples=["joke", "weather"]),
            RouteSpec(name="exact_lookup", search=True),
        ],
        rules=[IdentifierRule(pattern=r"\b[A-Z]{2}-\d{4}\b", route="exact_lookup")],
        classifier="centroid",
        **kw,
    )


def _router(**kw) -> Router:  # type: ignore[no-untyped-def]
    routing = _routing(**kw)
    return Router(routing, load_examples(routing), AxisEmbedder())


def test_rules_come_first_and_ignore_case() -> None:
    d = _router().route("refund for qr-5126?")
    assert (d.route, d.source, d.rule) == ("exact_lookup", "rule", r"\b[A-Z]{2}-\d{4}\b")
    assert d.scores == {}  # the classifier never ran


def test_a_clear_message_goes_to_its_route_with_every_score_kept() -> None:
    d = _router().route("warranty")
    assert (d.route, d.source) == ("kb_search", "classifier")
    assert set(d.scores) == {"account", "kb_search", "out_of_scope"}
    assert d.margin == pytest.approx(d.scores["kb_search"] - max(d.scores["account"], d.scores["out_of_scope"]))


def test_a_narrow_margin_is_unsure_and_the_default_applies_saying_so() -> None:
    d = _router(min_margin=0.2, default_route="kb_search").route("order warranty")
    assert d.deferred and d.route == "kb_search"
    assert "no LLM tier configured, default route kb_search applied" in d.reason
    step = _router(min_margin=0.2, default_route="kb_search").trace(d, 0.0)
    assert step.status == "fallback" and step.routing is not None and step.routing.deferred is True


def test_low_in_scope_signal_goes_out_of_scope() -> None:
    d = _router(min_in_scope=0.5, out_of_scope_route="out_of_scope").route("tomato soup")
    assert (d.route, d.source) == ("out_of_scope", "out_of_scope")


def test_a_plain_index_without_routes_searches_every_message() -> None:
    d = Router(RoutingSettings(), [], AxisEmbedder()).route("hello")
    assert (d.route, d.source) == ("search", "default")


def test_no_examples_and_no_default_cannot_route() -> None:
    routing = RoutingSettings(routes=[RouteSpec(name="kb_search")])
    with pytest.raises(ValueError, match="cannot route"):
        Router(routing, [], AxisEmbedder()).route("hello")


def test_auto_picks_centroids_for_a_handful_of_examples() -> None:
    routing = _routing().model_copy(update={"classifier": "auto"})
    assert type(Router(routing, load_examples(routing), AxisEmbedder()).classifier).__name__ == "CentroidClassifier"
