"""A corpus analysed for BM25 in batches, in parallel worker processes, into compact arrays.

Each batch of texts is analysed on its own (in a worker process when there is more than one
core and enough texts to pay for it): its terms in first-seen order, each text's distinct terms
with their counts as integer arrays, its BM25 length, word, bigram and spelling counts, and the
identifier keys of its chunks. Batches are merged in corpus order, so term ids, document
frequencies and every count come out exactly as one pass over the corpus would give them,
whatever the number of workers. No text's token list outlives its batch: what stays is one
array entry per (text, distinct term), from which `Analysis.vectors` computes the BM25 weights
once the corpus' average length is known.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from querywise.index.lexical import CODE_SPELLING, Lexicon, SparseVec, bounded_bigrams, doc_length, normalized_runs, surface_of
from querywise.text import STOPWORDS_EN, compounds, identifier_keys, normalize, plain_words, stem_words

__all__ = ["BATCH", "Analysis", "Batch", "analyse", "analyse_batch", "workers_for"]

#: Texts per batch: large enough that a worker's round trip is noise, small enough to stream.
BATCH = 2048
#: Below this many texts one process analyses them all: starting workers would cost more.
PARALLEL_MIN = 8 * BATCH


@dataclass
class Batch:
    """One batch analysed: term ids are local to it (`vocab`, in first-seen order)."""

    vocab: list[str]
    ptr: np.ndarray  # int64, len n + 1: text i's entries are [ptr[i], ptr[i + 1])
    terms: np.ndarray  # int32 local term ids, each text's distinct terms in first-seen order
    tf: np.ndarray  # int32 counts of those terms in the text
    lengths: np.ndarray  # int32 BM25 lengths (`lexical.doc_length`)
    words: Counter[str]
    bigrams: Counter[str]
    spellings: dict[str, Counter[str]]
    keys: list[list[str]]  # identifier keys of each text (and of what `identify` adds)


def analyse_batch(texts: Sequence[str], identify: Sequence[str] | None = None) -> Batch:
    """Analyse `texts` (the index's tokenizer: `text.analyze`); `identify[i]`, when given, is
    the text whose identifiers chunk i is looked up by (its text and string metadata)."""
    vocab: dict[str, int] = {}
    ptr, lengths = [0], []
    terms: list[int] = []
    tf: list[int] = []
    words: Counter[str] = Counter()
    bigrams: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for text in texts:
        norm = normalize(text)
        plain = plain_words(norm)
        joined = compounds(norm)
        words.update(plain)
        words.update(joined)
        # `text.terms_of(words(text))`: the plain words never hold "-" or ".", the compounds always
        # do (so are never stemmed, and no stop word is one).
        analysed = stem_words([w for w in plain if w not in STOPWORDS_EN]) + joined
        counts = Counter(analysed)  # first-seen order, as `dict.fromkeys` in Lexicon.build had it
        terms.extend(vocab.setdefault(t, len(vocab)) for t in counts)
        tf.extend(counts.values())
        ptr.append(len(terms))
        lengths.append(doc_length(analysed))
        bigrams.update(itertools.chain.from_iterable(map(" ".join, itertools.pairwise(run)) for run in normalized_runs(norm)))
        for code in CODE_SPELLING.findall(text):
            if any(ch.isdigit() for ch in code):
                spellings.setdefault(code.lower(), Counter())[code] += 1
    keys = [identifier_keys(t) for t in (identify if identify is not None else texts)]
    return Batch(
        vocab=list(vocab), ptr=np.asarray(ptr, dtype=np.int64), terms=np.asarray(terms, dtype=np.int32),
        tf=np.asarray(tf, dtype=np.int32), lengths=np.asarray(lengths, dtype=np.int32),
        words=words, bigrams=bigrams, spellings=spellings, keys=keys,
    )


@dataclass
class Analysis:
    """A corpus analysed: its lexicon, and each text's distinct term ids (ascending) and counts."""

    lexicon: Lexicon
    ptr: np.ndarray
    terms: np.ndarray
    tf: np.ndarray
    lengths: np.ndarray
    keys: list[list[str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.lengths)

    def vectors(self, start: int, stop: int, *, k1: float, b: float, avgdl: float | None = None) -> list[SparseVec]:
        """The BM25 document vectors of texts [start, stop): tf / (tf + k1 * (1 - b + b * dl / avgdl)),
        each term's weight in float64, rounded once. `avgdl`: the index's, for texts added to it
        (default: this corpus' own)."""
        avgdl = self.lexicon.avgdl if avgdl is None else avgdl
        lo, hi = int(self.ptr[start]), int(self.ptr[stop])
        norms = k1 * (1 - b + b * self.lengths[start:stop].astype(np.float64) / avgdl) if avgdl else np.full(stop - start, k1)
        tf = self.tf[lo:hi].astype(np.float64)
        weights = tf / (tf + np.repeat(norms, np.diff(self.ptr[start : stop + 1])))
        cuts = (self.ptr[start + 1 : stop] - lo).tolist()
        ids, ws = np.split(self.terms[lo:hi], cuts), np.split(weights, cuts)
        return [(i.tolist(), w.tolist()) for i, w in zip(ids, ws, strict=True)]


class _Merge:
    """Batches folded into one lexicon in corpus order (the order `analyse` hands them over)."""

    def __init__(self) -> None:
        self.lex = Lexicon()
        self.df: list[int] = []
        self.spellings: dict[str, Counter[str]] = {}
        self.ptr: list[np.ndarray] = [np.zeros(1, dtype=np.int64)]
        self.terms: list[np.ndarray] = []
        self.tf: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.keys: list[list[str]] = []
        self._entries = 0

    def add(self, batch: Batch) -> None:
        lex = self.lex
        ids = np.fromiter((lex.terms.setdefault(t, len(lex.terms)) for t in batch.vocab), dtype=np.int32, count=len(batch.vocab))
        self.df.extend([0] * (len(lex.terms) - len(self.df)))
        for tid, n in zip(ids.tolist(), np.bincount(batch.terms, minlength=len(batch.vocab)).tolist(), strict=True):
            self.df[tid] += n
        # Global ids, ascending within each text.
        terms = ids[batch.terms]
        row = np.repeat(np.arange(len(batch.lengths)), np.diff(batch.ptr))
        order = np.lexsort((terms, row))
        self.terms.append(terms[order])
        self.tf.append(batch.tf[order])
        self.ptr.append(batch.ptr[1:] + self._entries)
        self._entries += int(batch.ptr[-1])
        self.lengths.append(batch.lengths)
        lex.word_counts.update(batch.words)
        lex.bigram_counts.update(batch.bigrams)
        for key, seen in batch.spellings.items():
            self.spellings.setdefault(key, Counter()).update(seen)
        lex.n_docs += len(batch.lengths)
        lex.total_len += int(batch.lengths.sum())
        self.keys.extend(batch.keys)

    def result(self) -> Analysis:
        lex = self.lex
        lex.df = self.df
        lex.bigram_counts = bounded_bigrams(lex.bigram_counts)
        lex.surface = {key: surface_of(seen) for key, seen in self.spellings.items()}
        lex.spellings = self.spellings
        cat = np.concatenate
        return Analysis(lex, cat(self.ptr), cat(self.terms or [np.zeros(0, np.int32)]),
                        cat(self.tf or [np.zeros(0, np.int32)]), cat(self.lengths or [np.zeros(0, np.int32)]), self.keys)


def workers_for(n_texts: int, workers: int) -> int:
    """How many processes analyse `n_texts`: `workers` (0: one per core this process may use),
    and one when the corpus is too small to pay for starting more or the platform cannot fork."""
    if workers == 0:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if n_texts < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(workers, -(-n_texts // BATCH)))


# In a worker process only: the corpus it reads its batches from (inherited through the fork,
# never pickled). Each pool's workers get their own, so builds in two threads do not mix.
_corpus: tuple[Sequence[str], Sequence[str] | None] = ((), None)


def _receive(texts: Sequence[str], identify: Sequence[str] | None) -> None:
    global _corpus
    _corpus = (texts, identify)


def _worker_batch(start: int) -> Batch:
    texts, identify = _corpus
    stop = start + BATCH
    return analyse_batch(texts[start:stop], None if identify is None else identify[start:stop])


def _batches(texts: Sequence[str], identify: Sequence[str] | None, workers: int) -> Iterator[Batch]:
    starts = range(0, len(texts), BATCH)
    if workers <= 1:
        for start in starts:
            yield analyse_batch(texts[start : start + BATCH], None if identify is None else identify[start : start + BATCH])
        return
    # fork, not spawn: a spawned worker imports the caller's __main__ again, which in a script
    # without a main guard would run the caller's own code (a second build) in every worker.
    # A worker only analyses text and answers through the pool's pipe, so the threads a fork
    # leaves behind (the embedder's, a progress bar's) are never waited on.
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_receive, initargs=(texts, identify)) as pool:
        yield from pool.map(_worker_batch, starts)


def analyse(
    texts: Sequence[str],
    *,
    identify: Sequence[str] | None = None,
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
) -> Analysis:
    """Analyse `texts` for BM25 with `workers` processes (see `workers_for`); the result does
    not depend on the number of workers. `identify` as in `analyse_batch`."""
    merge = _Merge()
    for batch in _batches(texts, identify, workers_for(len(texts), workers)):
        merge.add(batch)
        if on_progress is not None:
            on_progress(len(batch.lengths))
    return merge.result()
