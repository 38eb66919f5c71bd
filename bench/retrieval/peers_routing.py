"""CLINC150 routing for bench/retrieval/peers.py: semantic-router and querywise's router, each in
the peers child it runs in (see the docstring of bench/retrieval/peers.py for the configurations)."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import RESULTS, datasets
from bench.retrieval.peers_builders import memory, model_folder


def clinc_subset(path: Path, limit: int | None, folder: Path) -> Path:
    """The data file itself, or (limit) an evenly spaced subset of each split written to `folder`
    (outside the repository): `limit` messages per split, 3 x limit of train."""
    if not limit:
        return path
    raw = datasets.clinc150(path)

    def even(rows: list[Any], n: int) -> list[Any]:
        return rows[:: max(1, len(rows) // n)][:n]

    sub = {split: even(rows, 3 * limit if split == "train" else limit) for split, rows in raw.items()}
    out = folder / "clinc150-subset.json"
    out.write_text(json.dumps(sub), encoding="utf-8")
    return out


def split_texts(raw: dict[str, Any], *splits: str) -> tuple[list[str], np.ndarray]:
    rows = [r for s in splits for r in raw[s]]
    return [t for t, _ in rows], np.asarray([lab for _, lab in rows])


def latency_sample(raw: dict[str, Any], n: int) -> list[str]:
    texts, _ = split_texts(raw, "test", "oos_test")
    return [texts[i] for i in np.random.default_rng(0).permutation(len(texts))[:n]]


def per_message_ms(fn: Callable[[str], Any], texts: Sequence[str]) -> dict[str, float]:
    from bench.measures import latency

    return latency(fn, texts, warm=20)


def routing_row(kind: np.ndarray, label: np.ndarray, y: np.ndarray, signal: np.ndarray, lat: dict[str, float], **extra: Any) -> dict[str, Any]:
    from bench.routing.router import metrics

    m = metrics(kind, label, y, signal)
    keys = ("in_scope_accuracy", "answered_accuracy", "deferred_share", "oos_recall", "oos_precision")
    return {**{k: round(m[k], 4) for k in keys}, "latency_p50_ms": lat["p50_ms"], "latency_p95_ms": lat["p95_ms"],
            "n_in_scope": m["n_in_scope"], "n_oos": m["n_oos"], **extra}


def best_threshold(conf: np.ndarray, top: np.ndarray, y: np.ndarray) -> float:
    """One global confidence threshold on val for querywise's objective (1 - w) x in-scope accuracy
    + w x OOS recall (w = bench.routing.router.OOS_WEIGHT); ties to the lower threshold."""
    from bench.routing.router import OOS_WEIGHT

    ins = y != "oos"
    best, pick = -1.0, 0.0
    for t in np.unique(np.concatenate([[0.0], conf])):
        routed = conf >= t
        isa = float((routed & (top == y))[ins].mean())
        recall = float((~routed)[~ins].mean()) if (~ins).any() else 0.0
        objective = (1 - OOS_WEIGHT) * isa + OOS_WEIGHT * recall
        if objective > best:
            best, pick = objective, float(t)
    return pick


def run_semantic_router(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    from semantic_router import IndexedRouter, Route
    from semantic_router.encoders import LocalEncoder

    raw = datasets.clinc150(path)
    encoder = LocalEncoder(name=str(model_folder()))
    by_route: dict[str, list[str]] = {}
    for text, label in raw["train"]:
        by_route.setdefault(label, []).append(text)
    router = IndexedRouter(encoder=encoder, routes=[Route(name=n, utterances=u) for n, u in by_route.items()])
    Xv, yv = split_texts(raw, "val", "oos_val")
    report = router.fit(Xv, [None if lab == "oos" else str(lab) for lab in yv])
    router.confidence_threshold = 0.5

    def top(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        picks = [router(t, threshold=0.0) for t in texts]  # the top route and its calibrated confidence
        return np.asarray([p.name or "" for p in picks]), np.asarray([p.confidence or 0.0 for p in picks])

    Xt, yt = split_texts(raw, "test", "oos_test")
    top_t, conf_t = top(Xt)
    assert all((router(t).name or "") == (n if c >= 0.5 else "") for t, n, c in zip(Xt[:20], top_t[:20], conf_t[:20], strict=True))
    top_v, conf_v = top(Xv)
    lat = per_message_ms(router, latency_sample(raw, args.latency_n))
    rows = {}
    for name, threshold in (("semantic-router", 0.5), ("semantic-router-valtuned", best_threshold(conf_v, top_v, yv))):
        routed = conf_t >= threshold
        rows[name] = routing_row(np.where(routed, "route", "oos"), np.where(routed, top_t, ""), yt, conf_t, lat,
                                 confidence_threshold=round(threshold, 4), fit_val_accuracy=round(report.accuracy, 4), fit_val_ece=round(report.ece, 4))
    return {"rows": rows}


def kept_experiment() -> str:
    """The trained-family configuration bench/routing/clinc150.py's chooser kept (its results file)."""
    try:
        chosen = json.loads((RESULTS / "router_clinc150.json").read_text(encoding="utf-8"))["chosen"]["trained"]["experiment"]
    except (OSError, KeyError, ValueError):
        chosen = "ft-lr-energy+maha+knn"
    return str(chosen)


def run_querywise_router(args: argparse.Namespace, path: Path, *, fine_tuned: bool) -> dict[str, Any]:
    from bench.routing.router import EXPERIMENTS, OOS_WEIGHT, POINT, OperatingPoint, calibrate, decide, fine_tuned_encoder, load_data, outcomes
    from querywise.embed import OnnxEmbedder

    name = kept_experiment().removeprefix("ft-")
    exp = next(e for e in EXPERIMENTS if e.name == ("ft-" + name if fine_tuned else name))
    folder = fine_tuned_encoder(path) if fine_tuned else None
    data = load_data(path, cache_dir=None, model_folder=folder)  # nothing cached: no vector written to disk
    X, y = data["train"]
    if exp.with_oos_train:
        X, y = np.vstack([X, data["oos_train"][0]]), np.concatenate([y, data["oos_train"][1]])
    clf = exp.make().fit(X, y)
    Xv = np.vstack([data["val"][0], data["oos_val"][0]])
    yv: Any = np.concatenate([data["val"][1], data["oos_val"][1]])  # intents: str, as the library takes them
    Xt, yt = np.vstack([data["test"][0], data["oos_test"][0]]), np.concatenate([data["test"][1], data["oos_test"][1]])
    embedder = OnnxEmbedder.fp32(export_dir=None, model_folder=folder, threads=args.threads)  # load_embedder's "onnx", uncached
    raw = datasets.clinc150(path)
    rows, base = {}, "querywise-finetuned" if fine_tuned else "querywise-frozen"
    for suffix, point in (("", POINT), ("-nodefer", OperatingPoint(min_answered=None, max_deferred=0.0))):
        th = calibrate(clf, Xv, yv, point, oos_weight=OOS_WEIGHT).thresholds

        def route_one(text: str, th: Any = th) -> Any:
            v = np.asarray(embedder.embed([text]), dtype=np.float32)
            return decide(clf.scores(v)[0], float(clf.in_scope(v)[0]), clf.labels, th)

        kind, label, signal = outcomes(clf, Xt, th)
        rows[base + suffix] = routing_row(kind, label, yt, signal, per_message_ms(route_one, latency_sample(raw, args.latency_n)),
                                          experiment=exp.name, operating_point=point.describe(),
                                          thresholds={"min_margin": round(th.min_margin, 4), "min_in_scope": round(th.min_in_scope, 4)})
    return {"rows": rows}


def run_clinc(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = clinc_subset(args.data, args.limit, Path(tmp))
        if args.system == "semantic-router":
            out = run_semantic_router(args, path)
        else:
            out = run_querywise_router(args, path, fine_tuned=args.system == "querywise-router-ft")
    for row in out["rows"].values():
        row.update(memory())
    return out
