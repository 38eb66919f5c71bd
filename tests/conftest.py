"""Shared fixtures. The fake embedder is deterministic and goes through the same index code
as the real one; tests that need real semantics use the packaged model (`real_embedder`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from querywise.config import Settings
from querywise.corpus import Chunk

FIXTURES = Path(__file__).parent / "fixtures"


def both_ways(model_a: bytes, model_b: bytes, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Two ONNX graphs' vectors of ``texts`` side by side: each text alone (as int8 runs a build's
    texts), then in padded batches."""
    from querywise.embed import OnnxEmbedder

    for batch_size, batch_tokens in ((1, 0), (8, 4096)):
        a, b = (OnnxEmbedder(m, model_id=name, threads=1, batch_size=batch_size, batch_tokens=batch_tokens).embed(texts)
                for name, m in (("a", model_a), ("b", model_b)))
        yield a, b


class HashEmbedder:
    """Bag-of-words vectors from hashed words: similar wording, similar vector."""

    model_id = "hash-bow/test"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str], *, on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, int(hashlib.md5(word.strip(".,?!").encode()).hexdigest(), 16) % self.dim] += 1.0
            out[i] /= np.linalg.norm(out[i]) or 1.0
        if on_progress:
            on_progress(len(texts))
        return out


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache")


SHOP = [
    Chunk(id="x3-warranty", text="Vela X3 headphones carry an 18-month warranty against manufacturing defects.",
          payload={"category": "headphones", "price": 179, "markets": ["eu", "us"]}),
    Chunk(id="x3pro-warranty", text="Vela X3 Pro headphones carry a 30-month warranty, sweat and rain included.",
          payload={"category": "headphones", "price": 249, "markets": ["eu", "us"]}),
    Chunk(id="buds-battery", text="Pico Buds play for 7 hours per charge; the case adds 21 hours.",
          payload={"category": "earbuds", "price": 99, "markets": ["us"]}),
    Chunk(id="cushions", text="Replacement cushions for the Vela X3 are part QR-5126; the X3 Pro uses QR-5162.",
          payload={"category": "accessory", "price": 25, "markets": ["eu"]}),
    Chunk(id="shipping", text="Standard orders ship within 2 business days; express arrives the next day.",
          payload={"category": "shipping", "price": 0, "markets": ["eu", "us"]}),
    Chunk(id="returns", text="Opened earbuds can be returned within 10 days if the hygiene seal is intact.",
          payload={"category": "policy", "price": 0, "markets": ["eu", "us"]}),
]


@pytest.fixture
def shop() -> list[Chunk]:
    return list(SHOP)


# Passages of several sentences, each about more than one thing: what the sentence list is for.
PASSAGES = [
    Chunk(id="vela", title="Vela X3", text="The Vela X3 folds flat. Its battery lasts 30 hours. The warranty runs 18 months and excludes water damage."),
    Chunk(id="tide", title="Tide 4 earbuds", text="Tide 4 earbuds charge in their case. Battery life is 8 hours, 32 with the case. They are sweat resistant."),
    Chunk(id="ship", title="Shipping", text="Standard shipping takes 3-5 working days. Express arrives the next day. Returns are free within 30 days."),
    Chunk(id="parts", title="Spare parts", text="Ear cushions are sold as part HC-3741. A replacement cable is part HC-2210. Parts ship worldwide."),
    Chunk(id="care", title="Care", text="Wipe the headphones with a dry cloth. Keep them away from water. Store them in the case."),
]


@pytest.fixture
def passages() -> list[Chunk]:
    return list(PASSAGES)




@pytest.fixture(scope="module")
def demo_deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The demo shop as `make run` serves it: its settings, its index built with the real
    embedder, one per test module (a `QueryWise`)."""
    from querywise import QueryWise, build_index, load_settings
    from querywise.demo import demo_corpus, demo_file

    settings = load_settings(demo_file("querywise.toml"))
    settings = settings.model_copy(update={"cache_dir": tmp_path_factory.mktemp("cache")})
    with build_index(demo_corpus(), Path(tmp_path_factory.mktemp("demo")) / "ix", settings=settings) as index, QueryWise(settings, index) as qw:
        yield qw
