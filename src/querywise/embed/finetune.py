"""Fine-tuning the packaged encoder on a deployment's labelled routing examples.

A frozen all-MiniLM-L6-v2 places many out-of-scope messages as close to the routes' examples
as in-scope ones (on CLINC150 its best in-scope signal separates them with AUROC 0.977, and no
threshold reaches 75% out-of-scope recall at 97% answered accuracy). One epoch of contrastive
training on the routes' own examples -- each example pulled towards another example of its
route, pushed from the other routes' examples in the batch -- tightens every route and leaves
messages about anything else outside (AUROC 0.986; bench/results/router_clinc150.md).

The result is a sentence-transformers folder used only by the router (retrieval keeps the
packaged model: its index vectors must not change), loaded with
`load_embedder("torch", model_folder=...)`. Training is deterministic for a seed on the CPU.

Nothing here prints: `plan_fine_tune` says what a run will do before anything heavy loads, and
`fine_tune_encoder` reports each phase (loading the encoder, training batches, saving) through a
`progress` callback from its first line, so a caller can show progress and a time estimate.

>>> plan_fine_tune(examples, epochs=1).steps                          # doctest: +SKIP
118
>>> fine_tune_encoder(examples, Path("router-encoder"), epochs=1)   # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from ._base import MODEL_NAME

__all__ = ["EncoderManifest", "Progress", "TrainingPlan", "fine_tune_encoder", "plan_fine_tune", "read_manifest"]

MANIFEST = "querywise-encoder.json"


class Progress(Protocol):
    """Starts a phase of `total` steps (None if unknown) and returns its advance callback
    (the shape of `querywise.index.store.Progress`, so one display serves both)."""

    def __call__(self, phase: str, total: int | None, /) -> Callable[[int], None]: ...


def _quiet(phase: str, total: int | None) -> Callable[[int], None]:
    return lambda n: None


class TrainingPlan(BaseModel):
    """What `fine_tune_encoder` will do with these examples, known before anything loads."""

    n_examples: int  # trained on (out-of-scope ones left out)
    n_left_out: int  # labelled out of scope: no route to pull them towards
    n_routes: int
    epochs: int
    batch_size: int
    pairs_per_epoch: int  # each route's examples paired off (an odd one out sits an epoch out)
    steps: int  # batches over all epochs: one optimiser step each


def plan_fine_tune(examples: Sequence[tuple[str, str]], *, epochs: int = 1, batch_size: int = 64, oos_label: str = "oos") -> TrainingPlan:
    """The plan of a run on `(text, label)` examples; ValueError when they cannot be trained on."""
    if epochs < 1 or batch_size < 2:
        raise ValueError(f"need epochs >= 1 and batch_size >= 2, got {epochs} and {batch_size}")
    counts: dict[str, int] = defaultdict(int)
    for _, label in examples:
        if label != oos_label:
            counts[label] += 1
    pairs = sum(n // 2 for n in counts.values())
    if pairs < 2 or len(counts) < 2:
        raise ValueError("fine-tuning needs at least 2 routes with 2 or more examples each")
    n_examples = sum(counts.values())
    return TrainingPlan(
        n_examples=n_examples, n_left_out=len(examples) - n_examples, n_routes=len(counts), epochs=epochs,
        batch_size=batch_size, pairs_per_epoch=pairs, steps=epochs * ((pairs + batch_size - 1) // batch_size),
    )


class EncoderManifest(BaseModel):
    """What a fine-tuned encoder folder was trained from, kept beside its weights."""

    base_model: str
    examples_sha256: str  # of the sorted (label, text) pairs: same examples, same hash
    n_examples: int
    n_routes: int
    epochs: int
    batch_size: int
    learning_rate: float
    seed: int
    temperature: float

    @property
    def model_id(self) -> str:
        """The id under which this encoder's vectors are cached (never the base model's)."""
        return f"{MODEL_NAME}/router-{self.examples_sha256[:12]}-e{self.epochs}-s{self.seed}"


def read_manifest(folder: Path) -> EncoderManifest:
    """The manifest of a folder written by `fine_tune_encoder`; a clear error otherwise."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: not a fine-tuned encoder folder (no {MANIFEST}); make one with `querywise router-train`")
    return EncoderManifest.model_validate_json(path.read_text(encoding="utf-8"))


def _pairs(by_route: dict[str, list[str]], rng: random.Random) -> list[tuple[str, str, str]]:
    """Each route's examples shuffled and paired off: (anchor, positive, route)."""
    pairs = []
    for route in sorted(by_route):
        texts = by_route[route][:]
        rng.shuffle(texts)
        pairs += [(a, b, route) for a, b in zip(texts[0::2], texts[1::2], strict=False)]
    rng.shuffle(pairs)
    return pairs


def fine_tune_encoder(
    examples: Sequence[tuple[str, str]],
    out_dir: Path | str,
    *,
    epochs: int = 1,
    batch_size: int = 64,
    learning_rate: float = 2e-5,
    seed: int = 0,
    temperature: float = 0.05,
    oos_label: str = "oos",
    progress: Progress = _quiet,
) -> EncoderManifest:
    """Train a copy of the packaged encoder on `(text, label)` examples and save it to `out_dir`.

    Loss: symmetric in-batch contrastive loss (InfoNCE, cosine / `temperature`) over pairs of
    examples of the same route; other pairs of the same route in a batch are masked out rather
    than counted as negatives. Examples labelled `oos_label` have no route to be pulled towards
    and are left out. `progress` is told of each phase before it starts -- "loading the
    encoder" (1 step, before torch is imported), "training" (`plan_fine_tune(...).steps`
    batches, advanced after each), "saving" (1 step) -- and nothing is printed.
    """
    plan = plan_fine_tune(examples, epochs=epochs, batch_size=batch_size, oos_label=oos_label)
    loading = progress("loading the encoder", 1)  # importing torch alone takes seconds
    from ._torch import load_sentence_transformer, quiet_transformers, torch_extra

    with torch_extra("fine-tuning an encoder (router-train)"):
        import torch
        from torch.nn import functional

    by_route: dict[str, list[str]] = defaultdict(list)
    for text, label in examples:
        if label != oos_label:
            by_route[label].append(text)
    digest = hashlib.sha256(json.dumps(sorted((label, text) for label, texts in by_route.items() for text in texts)).encode()).hexdigest()

    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = load_sentence_transformer()
    model.train()
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # renamed in sentence-transformers 6
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    schedule = [_pairs(by_route, rng) for _ in range(epochs)]
    loading(1)
    step = progress("training", plan.steps)
    for pairs in schedule:
        for start in range(0, len(pairs), batch_size):
            batch = pairs[start : start + batch_size]
            anchors = model(tokenize([a for a, _, _ in batch]))["sentence_embedding"]
            positives = model(tokenize([p for _, p, _ in batch]))["sentence_embedding"]
            sims = functional.normalize(anchors, dim=-1) @ functional.normalize(positives, dim=-1).T / temperature
            routes = [r for _, _, r in batch]
            same = torch.tensor([[routes[i] == routes[j] and i != j for j in range(len(batch))] for i in range(len(batch))])
            sims = sims.masked_fill(same, float("-inf"))
            target = torch.arange(len(batch))
            loss = (functional.cross_entropy(sims, target) + functional.cross_entropy(sims.T, target)) / 2
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            step(1)
    saving = progress("saving", 1)
    model.eval()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        model.save(str(out))
    manifest = EncoderManifest(
        base_model=MODEL_NAME, examples_sha256=digest, n_examples=sum(len(v) for v in by_route.values()),
        n_routes=len(by_route), epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, seed=seed,
        temperature=temperature,
    )
    (out / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    saving(1)
    return manifest
