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

>>> fine_tune_encoder(examples, Path("router-encoder"), epochs=1)   # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from ._base import MODEL_NAME

__all__ = ["EncoderManifest", "fine_tune_encoder", "read_manifest"]

MANIFEST = "querywise-encoder.json"


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
    on_progress: Callable[[int, int], None] | None = None,
) -> EncoderManifest:
    """Train a copy of the packaged encoder on `(text, label)` examples and save it to `out_dir`.

    Loss: symmetric in-batch contrastive loss (InfoNCE, cosine / `temperature`) over pairs of
    examples of the same route; other pairs of the same route in a batch are masked out rather
    than counted as negatives. Examples labelled `oos_label` have no route to be pulled towards
    and are left out. `on_progress(done, total)` is called after each batch.
    """
    import torch
    from torch.nn import functional

    from ._torch import load_sentence_transformer, quiet_transformers

    if epochs < 1 or batch_size < 2:
        raise ValueError(f"need epochs >= 1 and batch_size >= 2, got {epochs} and {batch_size}")
    by_route: dict[str, list[str]] = defaultdict(list)
    for text, label in examples:
        if label != oos_label:
            by_route[label].append(text)
    if sum(len(v) // 2 for v in by_route.values()) < 2 or len(by_route) < 2:
        raise ValueError("fine-tuning needs at least 2 routes with 2 or more examples each")
    digest = hashlib.sha256(json.dumps(sorted((label, text) for label, texts in by_route.items() for text in texts)).encode()).hexdigest()

    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = load_sentence_transformer()
    model.train()
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # renamed in sentence-transformers 6
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    schedule = [_pairs(by_route, rng) for _ in range(epochs)]
    total, done = sum((len(p) + batch_size - 1) // batch_size for p in schedule), 0
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
            done += 1
            if on_progress is not None:
                on_progress(done, total)
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
    return manifest
