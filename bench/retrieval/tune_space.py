"""What `querywise tune` leaves on the table: query-time settings it does not choose, measured on
labelled queries through an index's own lists (issue 39).

    PYTHONPATH=src:. .venv/bin/python -m bench.retrieval.tune_space search SOURCE -i DIR --split train --out LISTS.pkl
    PYTHONPATH=src:. .venv/bin/python -m bench.retrieval.tune_space families LISTS.pkl --out RESULT.json

`search` asks each case's dense, BM25 (and, with sentence vectors, best-sentence) lists as typed,
`DEEP` deep, once. `families` ranks every candidate of each family from those lists as the engine
fuses (`index.fusion.fuse_scored`, ties to the chunk first in the corpus) and scores it per
document; each family's choice is cross-validated over tune's folds (`evaluation.tune.fold_of`)
and compared case by case with the same procedure over tune's own grid (the `base` family), so a
family's `cv_gain_vs_base` is what adding it to tune would give on queries it did not see.
Nothing here reads a test split unless it is given one.
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from querywise.config.loading import load_settings
from querywise.evaluation.cases import read_case_source
from querywise.evaluation.harness import JudgedIds
from querywise.evaluation.metrics import parse_metric, score
from querywise.evaluation.stats import paired_difference
from querywise.evaluation.tune import CONVEX_WEIGHTS, RRF_WEIGHTS, fold_of
from querywise.index import Index
from querywise.index.fusion import fuse_scored

DEEP = 300
Listed = list[tuple[str, str, float]]  # (chunk id, doc id, score)


def search(source: Path, index: Path, split: str, out: Path) -> None:
    settings = load_settings(None)
    cases = [c for c in read_case_source(source, split=split, skip_invalid=True).cases if c.relevant]
    with Index.open(index, settings=settings) as ix:
        sentences = ix.manifest.n_sentences is not None
        position = {chunk.id: i for i, chunk in enumerate(ix.chunks())}
        ids = JudgedIds.of(ix)
        vectors = np.asarray(ix.embedder.embed([c.message for c in cases]), dtype=np.float32)
        rows = []
        for row, case in enumerate(cases):
            sparse = ix.lexicon.query_vector(case.message)
            dense = ix.query(mode="dense", k=DEEP, dense=vectors[row].tolist(), feedback=False)
            bm25 = ix.query(mode="bm25", k=DEEP, sparse=sparse, feedback=False)
            best = ix.sentence_query(vectors[row].tolist(), k=DEEP) if sentences else []
            rows.append({"id": case.id, "relevant": case.relevant, "per_document": ids.per_document(case.relevant),
                         "dense": [(h.id, h.doc_id, h.score) for h in dense], "bm25": [(h.id, h.doc_id, h.score) for h in bm25],
                         "best": [(h.id, h.doc_id, h.score) for h in best]})
    out.write_bytes(pickle.dumps({"split": split, "source": str(source), "index": str(index), "sentences": sentences,
                                  "position": position, "cases": rows}))


@dataclass(frozen=True)
class Cand:
    fusion: str
    w: float
    share: float | None = None
    depth: int = 100
    rrf_k: int = 60
    bonus: float = 0.0  # a document's best chunk gains bonus x its second-best chunk's fused score

    @property
    def label(self) -> str:
        s = f"{self.fusion} w={self.w:g}" + ("" if self.share is None else f" s={self.share:g}")
        return s + f" depth={self.depth} k={self.rrf_k}" + (f" bonus={self.bonus:g}" if self.bonus else "")


def ranked_docs(case: dict, cand: Cand, position: dict[str, int], share_on: bool) -> list[str]:
    d = cand.depth
    doc_of = {cid: doc for lst in ("dense", "bm25", "best") for cid, doc, _ in case[lst][:d]}
    fused = fuse_scored([[(c, s) for c, _, s in case["dense"][:d]], [(c, s) for c, _, s in case["bm25"][:d]]],
                        fusion=cand.fusion, dense_weight=cand.w, rrf_k=cand.rrf_k,  # type: ignore[arg-type]
                        sentences=[(c, s) for c, _, s in case["best"][:d]] if share_on else None, sentence_share=cand.share or 0.0)
    if cand.bonus:
        by_doc: dict[str, list[float]] = {}
        for cid, s in fused:
            by_doc.setdefault(doc_of[cid], []).append(s)
        seconds = {doc: sorted(v, reverse=True)[1] for doc, v in by_doc.items() if len(v) > 1}
        seen: set[str] = set()
        bumped = []
        for cid, s in sorted(fused, key=lambda kv: (-kv[1], position.get(kv[0], 0))):
            doc = doc_of[cid]
            bumped.append((cid, s + (cand.bonus * seconds.get(doc, 0.0) if doc not in seen else 0.0)))
            seen.add(doc)
        fused = bumped
    fused.sort(key=lambda kv: (-kv[1], position.get(kv[0], len(position))))
    top = fused[:d]
    if case["per_document"]:
        return list(dict.fromkeys(doc_of[c] for c, _ in top))
    return [c for c, _ in top]


def families(sentences: bool) -> dict[str, list[Cand]]:
    shares: Sequence[float | None] = [round(0.1 * i, 1) for i in range(11)] if sentences else [None]
    near: Sequence[float | None] = [0.4, 0.5, 0.6, 0.7] if sentences else [None]

    def grid(**kw: float) -> list[Cand]:
        return ([Cand("rrf", w, s, **kw) for s in (near if kw else shares) for w in RRF_WEIGHTS]  # type: ignore[arg-type]
                + [Cand("convex", w, s, **kw) for s in (near if kw else shares) for w in CONVEX_WEIGHTS])  # type: ignore[arg-type]

    base = grid()
    out = {"base": base}
    out["depth"] = base + [c for d in (20, 30, 50, 200, 300) for c in grid(depth=d)]
    out["rrf_k"] = base + [Cand("rrf", w, s, rrf_k=k) for k in (5, 10, 20, 30, 120) for s in near for w in RRF_WEIGHTS]
    out["fine_w"] = base + [Cand("convex", round(0.3 + 0.01 * i, 2), s) for s in near for i in range(51) if (i % 5)]
    out["bonus"] = base + [c for b in (0.05, 0.1, 0.2, 0.3, 0.5) for c in grid(bonus=b)]
    if sentences:
        out["fine_share"] = base + [Cand(f, w, round(0.05 * i, 2)) for i in range(1, 20, 2)
                                    for f, ws in (("rrf", RRF_WEIGHTS), ("convex", CONVEX_WEIGHTS)) for w in ws]
    return out


def evaluate(lists: Path, out: Path, test: Path | None, folds: int = 5) -> None:
    data = pickle.loads(lists.read_bytes())
    metric = parse_metric("ndcg@10")
    cases, position, sentences = data["cases"], data["position"], data["sentences"]
    fams = families(sentences)
    every = list(dict.fromkeys(c for cands in fams.values() for c in cands))
    col = {c: i for i, c in enumerate(every)}
    started = time.process_time()
    table = np.array([[score(metric, ranked_docs(case, c, position, sentences), case["relevant"]) or 0.0 for c in every] for case in cases])
    fold = np.array([fold_of(c["id"], folds) for c in cases])

    def held_out(cols: Sequence[int]) -> np.ndarray:
        per = np.zeros(len(cases))
        for f in range(folds):
            tr, te = fold != f, fold == f
            best = max(cols, key=lambda j: (table[tr, j].mean(), -j))
            per[te] = table[te, best]
        return per

    means = table.mean(axis=0)
    base_held = held_out([col[c] for c in fams["base"]])
    result: dict[str, object] = {"lists": str(lists), "split": data["split"], "n": len(cases), "folds": folds, "sentences": sentences,
                                 "cpu_s": 0.0, "families": {}}
    chosen: dict[str, Cand] = {}
    for name, cands in fams.items():
        cols = [col[c] for c in cands]
        held = held_out(cols)
        gain = paired_difference(base_held, held)
        top = max(cols, key=lambda j: (means[j], -j))
        chosen[name] = every[top]
        result["families"][name] = {  # type: ignore[index]
            "n_candidates": len(cands), "best_on_all": every[top].label, "best_mean": round(float(means[top]), 4),
            "cv_score": round(float(held.mean()), 4), "cv_gain_vs_base": round(gain.delta, 4),
            "cv_gain_low": round(gain.low, 4), "cv_gain_high": round(gain.high, 4)}
    result["cpu_s"] = round(time.process_time() - started, 1)
    if test is not None:  # one look per family: its choice on all of `lists`' cases, scored on the test lists
        tdata = pickle.loads(test.read_bytes())
        looks = {}
        for name, cand in chosen.items():
            s = np.array([score(metric, ranked_docs(case, cand, tdata["position"], sentences), case["relevant"]) or 0.0 for case in tdata["cases"]])
            looks[name] = {"candidate": cand.label, "test_ndcg@10_as_typed": round(float(s.mean()), 4)}
        result["test"] = {"lists": str(test), "n": len(tdata["cases"]), "looks": looks}
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("search")
    s.add_argument("source", type=Path)
    s.add_argument("-i", "--index", type=Path, required=True)
    s.add_argument("--split", default="train")
    s.add_argument("--out", type=Path, required=True)
    f = sub.add_parser("families")
    f.add_argument("lists", type=Path)
    f.add_argument("--out", type=Path, required=True)
    f.add_argument("--test", type=Path, default=None, help="test lists: score each family's choice once")
    args = p.parse_args()
    if args.cmd == "search":
        search(args.source, args.index, args.split, args.out)
    else:
        evaluate(args.lists, args.out, args.test)


if __name__ == "__main__":
    main()
