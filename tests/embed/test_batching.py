"""BatchingEmbedder: concurrent callers share model calls, and get exactly their own vectors."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from querywise.embed import BatchingEmbedder


class Slow:
    """A deterministic embedder that records its calls and takes a moment per call."""

    model_id, dim = "slow-test", 8

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str], *, on_progress: object = None) -> np.ndarray:
        self.gate.wait(5)
        self.calls.append(len(texts))
        rows = np.array([[hash((t, i)) % 1000 for i in range(self.dim)] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_waiting_callers_are_embedded_together_and_each_gets_its_own_vector() -> None:
    model = Slow()
    model.gate.set()  # the expected vectors without the wait (12 waits of 5 s)
    expected = {f"q{i}": model.embed([f"q{i}"])[0] for i in range(12)}
    model.calls.clear()
    model.gate.clear()
    batcher = BatchingEmbedder(model, max_batch=32)
    got: dict[str, np.ndarray] = {}
    threads = [threading.Thread(target=lambda t=t: got.__setitem__(t, batcher.embed([t])[0])) for t in expected]
    for t in threads:
        t.start()
    model.gate.set()  # the first call waited: the others queued up behind it
    for t in threads:
        t.join(10)
    batcher.close()
    assert all(np.array_equal(got[t], expected[t]) for t in expected)
    assert sum(model.calls) == 12 and len(model.calls) < 12  # fewer model calls than callers


def test_recent_texts_come_from_memory_and_a_big_call_goes_straight_to_the_model() -> None:
    model = Slow()
    model.gate.set()
    batcher = BatchingEmbedder(model, max_batch=4, cache_size=2)
    batcher.embed(["a", "b"])
    batcher.embed(["a"])
    assert model.calls == [2]  # "a" was remembered
    batcher.embed(["c", "d", "e", "f", "g"])  # more than max_batch: one direct call
    assert model.calls == [2, 5]
    batcher.embed(["c"]), batcher.embed(["x"]), batcher.embed(["a"])  # the LRU holds 2: "a" fell out
    assert model.calls[-1] == 1 and len(model.calls) == 5
    batcher.close()


def test_a_failing_model_fails_every_caller_of_the_batch() -> None:
    class Broken(Slow):
        def embed(self, texts: Sequence[str], *, on_progress: object = None) -> np.ndarray:
            raise RuntimeError("model crashed")

    batcher = BatchingEmbedder(Broken())
    with pytest.raises(RuntimeError, match="model crashed"):
        batcher.embed(["x"])
    batcher.close()
