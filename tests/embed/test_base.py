from __future__ import annotations

import numpy as np

from querywise.embed._base import embed_in_batches, length_sorted_batches


def test_a_token_budget_caps_each_batch_by_its_longest_text() -> None:
    lengths = [256, 10, 256, 120, 10, 10, 256, 120]
    batches = [b.tolist() for b in length_sorted_batches(lengths, 4, max_tokens=512)]
    # Longest first; a batch is padded to its first text: 512 tokens hold two of 256 (the
    # second pair's 120 is padded to 256), four of 120 (batch_size caps it at 4).
    assert batches == [[0, 2], [6, 3], [7, 1, 4, 5]]
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))


def test_a_text_longer_than_the_budget_still_gets_a_batch_of_its_own() -> None:
    assert [b.tolist() for b in length_sorted_batches([900, 5], 8, max_tokens=512)] == [[0], [1]]


def test_no_budget_keeps_batches_of_batch_size() -> None:
    assert [len(b) for b in length_sorted_batches([3] * 10, 4)] == [4, 4, 2]


def test_rows_come_back_in_input_order_whatever_the_batches() -> None:
    lengths = [5, 300, 40, 300, 7]
    seen: list[int] = []

    def run(positions: np.ndarray) -> np.ndarray:
        seen.append(len(positions))
        return np.asarray([[float(i), 0.0] for i in positions], dtype=np.float32)

    out = embed_in_batches(lengths, 64, 2, run, None, max_tokens=600)
    assert out[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert seen == [2, 3]


def test_batches_run_by_workers_come_back_in_input_order_and_are_all_counted() -> None:
    import threading

    lengths = [5, 300, 40, 300, 7, 12, 90]
    threads: set[str] = set()
    progress: list[int] = []
    started = threading.Barrier(2, timeout=5)  # two batches in flight at once, or this times out

    def run(positions: np.ndarray) -> np.ndarray:
        threads.add(threading.current_thread().name)
        if int(positions[0]) in (1, 3):  # the two longest, the first two batches
            started.wait()
        return np.asarray([[float(i), 1.0] for i in positions], dtype=np.float32)

    out = embed_in_batches(lengths, 1, 2, run, progress.append, workers=2)
    assert out[:, 0].tolist() == [float(i) for i in range(len(lengths))]
    assert sum(progress) == len(lengths) and len(threads) == 2
