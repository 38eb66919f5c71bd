"""Routing cascade: identifier rules, then an embedding classifier behind a margin gate, then
`unsure` (for the LLM tier; without one the configured default route applies, and says so).

Confidence is not correctness: the margin and the in-scope signal only decide which stage
answers. Whether a stage is right is measured on labelled data (`querywise router-eval`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

import numpy as np

from querywise.clock import ms_since
from querywise.config import RoutingSettings
from querywise.embed import Embedder
from querywise.files import InputError, read_jsonl
from querywise.plan import RouteEvidence, TraceStep
from querywise.understand.routing.classifiers import CentroidClassifier, TrainedClassifier
from querywise.understand.routing.decision import Thresholds, decide

__all__ = ["RouteDecision", "Router", "load_examples"]

Source = Literal["rule", "classifier", "unsure", "out_of_scope", "default"]
# Below this many examples per route a trained model overfits; centroids are the better bet.
MIN_EXAMPLES_FOR_TRAINED = 20


@dataclass(frozen=True)
class RouteDecision:
    route: str
    source: Source
    reason: str
    scores: dict[str, float] = field(default_factory=dict)
    margin: float | None = None
    in_scope: float | None = None
    rule: str | None = None

    @property
    def deferred(self) -> bool:
        """True when the classifier was unsure: the LLM tier's cue."""
        return self.source == "unsure"


class _Scored(TypedDict):
    """The classifier's evidence, common to every decision it takes part in."""

    scores: dict[str, float]
    margin: float | None
    in_scope: float | None


def load_examples(routing: RoutingSettings) -> list[tuple[str, str]]:
    """(text, route) pairs from the inline route examples and the examples file."""
    pairs = [(text, r.name) for r in routing.routes for text in r.examples]
    if routing.examples_file is not None:
        for line, rec in read_jsonl(routing.examples_file):
            text, label = rec.get("text"), rec.get("label")
            if not isinstance(text, str) or not isinstance(label, str):
                raise InputError(routing.examples_file, line, 'expected {"text": ..., "label": ...}')
            pairs.append((text, label))
    known = {r.name for r in routing.routes}
    if known:
        for text, label in pairs:
            if label not in known:
                raise InputError(routing.examples_file or "routing.routes", None, f"example {text!r} has unknown route {label!r}")
    return pairs


SEARCH_ROUTE = "search"  # the route of a deployment that configures none


class Router:
    """Decides where a message goes. Fit once from labelled examples; `route()` is cheap.

    >>> router = Router(settings.routing, load_examples(settings.routing), embedder)  # doctest: +SKIP
    >>> router.route("is qr-5126 in stock").route                                       # doctest: +SKIP
    'exact_lookup'
    """

    def __init__(self, routing: RoutingSettings, examples: Sequence[tuple[str, str]], embedder: Embedder, *, llm_tier: bool = False) -> None:
        """`llm_tier`: an LLM decides unsure messages (the pipeline calls it); only the wording
        of the reason changes here."""
        self.settings, self.embedder, self.llm_tier = routing, embedder, llm_tier
        self._rules = [(re.compile(r.pattern, re.IGNORECASE), r) for r in routing.rules]
        texts, labels = [t for t, _ in examples], [lab for _, lab in examples]
        self.classifier: CentroidClassifier | TrainedClassifier | None = None
        if texts:
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
            self.classifier = self._choose(routing.classifier, labels).fit(vectors, labels)
        self.thresholds = Thresholds(
            min_margin=routing.min_margin,
            min_in_scope=routing.min_in_scope if routing.min_in_scope is not None else float("-inf"),
        )

    @staticmethod
    def _choose(kind: str, labels: Sequence[str]) -> CentroidClassifier | TrainedClassifier:
        if kind == "centroid":
            return CentroidClassifier()
        if kind == "trained":
            return TrainedClassifier()
        fewest = min(Counter(labels).values())
        return TrainedClassifier() if fewest >= MIN_EXAMPLES_FOR_TRAINED else CentroidClassifier()

    def route(self, message: str, *, vector: np.ndarray | None = None) -> RouteDecision:
        """Rules first; the classifier only when no rule fires (then `vector` is reused if given)."""
        for pattern, rule in self._rules:
            if m := pattern.search(message):
                return RouteDecision(rule.route, "rule", f"identifier rule matched {m.group(0)!r}", rule=rule.pattern)
        fallback = self.settings.default_route
        if self.classifier is None:
            if fallback is not None:
                return RouteDecision(fallback, "unsure", "no routing examples configured; default route applied")
            if not self.settings.routes:  # a plain index: nothing to choose between, so search
                return RouteDecision(SEARCH_ROUTE, "default", "no routes configured: every message is searched")
            raise ValueError("routes without examples and no default_route: cannot route")
        if vector is None:
            vector = np.asarray(self.embedder.embed([message])[0], dtype=np.float32)
        row = vector.reshape(1, -1)
        scores = self.classifier.scores(row)[0]
        in_scope = float(self.classifier.in_scope(row)[0])
        labels = list(self.classifier.labels)
        d = decide(scores, in_scope, labels, self.thresholds)
        all_scores = {lab: float(s) for lab, s in zip(labels, scores, strict=True)}
        common: _Scored = {"scores": all_scores, "margin": d.margin, "in_scope": in_scope}
        if d.kind == "oos":
            target = self.settings.out_of_scope_route or fallback or d.top
            reason = f"in-scope signal {in_scope:.3f} < {self.thresholds.min_in_scope:.3f}"
            return RouteDecision(target, "out_of_scope", reason, **common)
        if d.kind == "unsure":
            target = fallback or d.top
            then = "sent to the LLM tier" if self.llm_tier else "no LLM tier configured"
            reason = (
                f"margin {d.margin:.3f} < {self.thresholds.min_margin:.3f} between {d.top} and {d.second}: unsure; "
                f"{then}, {'default route' if fallback else 'top route'} {target} applied"
                + (" until it answers" if self.llm_tier else "")
            )
            return RouteDecision(target, "unsure", reason, **common)
        return RouteDecision(d.top, "classifier", f"{d.top} by margin {d.margin:.3f}", **common)

    def trace(self, decision: RouteDecision, started: float) -> TraceStep:
        """The trace entry for a decision (scores for every route are kept: several intents can be present)."""
        return TraceStep(
            move="route",
            status="fallback" if decision.deferred else "ran",
            reason=decision.reason,
            changed=f"route = {decision.route}",
            latency_ms=ms_since(started),
            routing=RouteEvidence(
                source=decision.source,
                scores={k: round(v, 4) for k, v in decision.scores.items()},
                margin=None if decision.margin is None else round(decision.margin, 4),
                in_scope=None if decision.in_scope is None else round(decision.in_scope, 4),
                rule=decision.rule,
            ),
        )
