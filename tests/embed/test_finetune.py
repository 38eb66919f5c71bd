"""Fine-tuning the router's encoder on labelled examples (real model, a tiny training set)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from querywise.embed import fine_tune_encoder, load_embedder, read_manifest
from querywise.embed.finetune import plan_fine_tune

# Our own shop's routing examples: three routes whose wording overlaps on purpose.
EXAMPLES = [
    ("where is my parcel", "order_status"), ("has my order shipped yet", "order_status"),
    ("track my delivery", "order_status"), ("when will my package arrive", "order_status"),
    ("I want my money back", "refund"), ("how do I get a refund", "refund"),
    ("refund for a broken speaker", "refund"), ("can I return this for my money", "refund"),
    ("change the address on my account", "account"), ("reset my password", "account"),
    ("update my email address", "account"), ("delete my account", "account"),
    ("what is the meaning of life", "oos"), ("tell me a joke", "oos"),
]  # fmt: skip


def _separation(vectors: np.ndarray, labels: list[str]) -> float:
    """Mean cosine within routes minus mean cosine across routes."""
    sims = vectors @ vectors.T
    same = np.equal.outer(labels, labels) & ~np.eye(len(labels), dtype=bool)
    other = ~np.equal.outer(labels, labels)
    return float(sims[same].mean() - sims[other].mean())


Events = list[tuple[str, int | None, int]]  # (phase, total, steps advanced so far)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Events]:
    """One small fine-tune for the whole module, with every progress event it emitted."""
    out = tmp_path_factory.mktemp("encoder")
    events: Events = []

    def progress(phase: str, total: int | None) -> Callable[[int], None]:
        events.append((phase, total, 0))

        def advance(n: int) -> None:
            phase_, total_, done = events[-1]
            events.append((phase_, total_, done + n))

        return advance

    fine_tune_encoder(EXAMPLES, out, epochs=3, batch_size=4, learning_rate=5e-5, seed=1, progress=progress)
    return out, events


@pytest.fixture(scope="module")
def encoder(trained: tuple[Path, Events]) -> Path:
    return trained[0]


def test_the_plan_is_known_before_anything_loads() -> None:
    plan = plan_fine_tune(EXAMPLES, epochs=3, batch_size=4)
    # 12 in-scope examples, 4 a route: 2 pairs a route, 6 pairs an epoch, 2 batches of at most 4
    assert (plan.n_examples, plan.n_left_out, plan.n_routes, plan.pairs_per_epoch, plan.steps) == (12, 2, 3, 6, 6)
    with pytest.raises(ValueError, match="batch_size"):
        plan_fine_tune(EXAMPLES, batch_size=1)


@pytest.mark.model
def test_fine_tuning_reports_progress_from_its_first_line(trained: tuple[Path, Events]) -> None:
    _, events = trained
    steps = plan_fine_tune(EXAMPLES, epochs=3, batch_size=4).steps
    # the first event comes before torch and the model load; every training step is reported
    assert events[0] == ("loading the encoder", 1, 0)
    assert events[1] == ("loading the encoder", 1, 1)
    assert [e for e in events if e[0] == "training"] == [("training", steps, i) for i in range(steps + 1)]
    assert events[-2:] == [("saving", 1, 0), ("saving", 1, 1)]


@pytest.mark.model
def test_fine_tuning_pulls_each_routes_examples_together(encoder: Path) -> None:
    texts = [t for t, lab in EXAMPLES if lab != "oos"]
    labels = [lab for _, lab in EXAMPLES if lab != "oos"]
    base = load_embedder("torch", cache_dir=None).embed(texts)
    tuned = load_embedder("torch", cache_dir=None, model_folder=encoder).embed(texts)
    assert np.allclose(np.linalg.norm(tuned, axis=1), 1.0, atol=1e-5)
    assert _separation(tuned, labels) > _separation(base, labels) + 0.05


@pytest.mark.model
def test_the_manifest_records_the_training_and_keys_the_cache(encoder: Path, tmp_path: Path) -> None:
    manifest = read_manifest(encoder)
    assert (manifest.n_examples, manifest.n_routes, manifest.epochs, manifest.seed) == (12, 3, 3, 1)  # oos left out
    tuned = load_embedder("torch", cache_dir=tmp_path, model_folder=encoder)
    base = load_embedder("torch", cache_dir=tmp_path)
    # Same cache folder, different ids: the router's vectors never stand in for the index's.
    assert tuned.model_id.startswith(manifest.model_id) and not base.model_id.startswith(manifest.model_id)
    assert not np.allclose(tuned.embed(["where is my parcel"]), base.embed(["where is my parcel"]))


def test_a_folder_that_is_not_an_encoder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="router-train"):
        load_embedder("torch", cache_dir=None, model_folder=tmp_path)


def test_too_few_examples_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 2 routes"):
        fine_tune_encoder([("a", "x"), ("b", "x")], tmp_path)


@pytest.mark.model
def test_a_deployment_routes_with_its_fine_tuned_encoder(encoder: Path, tmp_path: Path) -> None:
    from querywise.config import RouteSpec, RoutingSettings, Settings
    from querywise.understand.pipeline import Understander

    routes = {}
    for text, label in EXAMPLES:
        if label != "oos":
            routes.setdefault(label, []).append(text)
    settings = Settings(
        cache_dir=tmp_path,
        routing=RoutingSettings(routes=[RouteSpec(name=n, examples=ex, search=True) for n, ex in routes.items()], encoder=encoder),
    )
    understander = Understander(settings)
    assert understander.router.embedder.model_id.startswith(read_manifest(encoder).model_id)
    assert understander.embedder.model_id != understander.router.embedder.model_id  # retrieval keeps the packaged model
    assert understander.plan("has my parcel shipped?").route == "order_status"


@pytest.mark.model
def test_the_onnx_export_of_a_fine_tuned_encoder_matches_torch(encoder: Path, tmp_path: Path) -> None:
    texts = [t for t, _ in EXAMPLES]
    torch_vectors = load_embedder("torch", cache_dir=None, model_folder=encoder).embed(texts)
    onnx = load_embedder("onnx", cache_dir=tmp_path, model_folder=encoder)
    assert onnx.model_id.endswith("/onnx-fp32")
    assert float(np.min(np.sum(torch_vectors * onnx.embed(texts), axis=1))) > 1 - 1e-5
