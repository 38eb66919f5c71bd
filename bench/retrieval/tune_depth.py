"""Does tune's list-depth stage do harm where deeper lists do not help? (issue 39)

    PYTHONPATH=src:. .venv/bin/python -m bench.retrieval.tune_depth [--work DIR]

`querywise tune`'s procedure (fusion, then `[index] depth` in `evaluation.tune.DEPTHS`) on:
- doc2dial passages: the turns that need no context, tuned on the dev documents and the choice
  scored once on the test documents (`bench.datasets.doc2dial_split`, never by turn), next to the
  same fusion at the configured depth (as typed, no moves; the cases of bench/retrieval/fusion.py);
- Medline: its one split, cross-validated (the depth stage's held-out gain over the configured depth).
Reads the indexes bench/retrieval/evaluation.py and the defaults gate build (eval-doc2dial, gate-medline)
under --work (default bench/work). Writes bench/results/tune_depth.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from bench import WORK, datasets, log
from bench.datasets import doc2dial_split, document_of

COMMAND = "PYTHONPATH=src:. .venv/bin/python -m bench.retrieval.tune_depth"


def _scored(index: Path, cases: list[Any], fusion: str, weight: float, depth: int) -> float:
    from querywise.config import IndexSettings, Settings
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metric
    from querywise.index import Index
    from querywise.service import QueryWise

    s = Settings().model_copy(update={"index": IndexSettings(fusion=fusion, dense_weight=weight, depth=depth)})
    with Index.open(index, settings=s) as ix, QueryWise(s, ix) as qw:
        run = run_arm(cases, qw, Arm(name="tuned", mode="hybrid"), [parse_metric("ndcg@10")])
    return round(sum(r.scores["ndcg@10"] or 0.0 for r in run.cases) / len(cases), 4)


def _tune(index: Path, cases: list[Any]) -> Any:
    from querywise.config import Settings
    from querywise.evaluation.metrics import parse_metric
    from querywise.evaluation.tune import tune
    from querywise.index import Index
    from querywise.service import QueryWise

    s = Settings()
    with Index.open(index, settings=s) as ix, QueryWise(s, ix) as qw:
        return tune(cases, qw, parse_metric("ndcg@10"))


def main() -> None:
    from querywise.chunking import Chunker

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, default=WORK)
    p.add_argument("--out", type=Path, default=Path("bench/results/tune_depth.json"))
    args = p.parse_args()
    started, cpu = time.time(), time.process_time()
    rows: dict[str, Any] = {}

    _, cases = datasets.doc2dial(Chunker())
    alone = [c.model_copy(update={"history": ()}) for c in cases if not c.history or "standalone" in c.slices]
    doc = {c.id: document_of(c) for c in alone}
    dev = [c for c in alone if doc2dial_split(doc[c.id]) != "test"]
    test = [c for c in alone if doc2dial_split(doc[c.id]) == "test"]
    index = args.work / "eval-doc2dial"
    tuned = _tune(index, dev)
    d = tuned.depth
    c = tuned.chosen
    row: dict[str, Any] = {"dev": len(dev), "test": len(test), "chosen_on_dev": c.label, "dev_cv": tuned.cv_score,
                           "depth": d.model_dump() if d is not None else None}
    if d is not None:
        row["test_at_configured_depth"] = _scored(index, test, c.fusion, c.dense_weight, d.configured)
        if d.chosen is not None:
            row["test_at_chosen_depth"] = _scored(index, test, c.fusion, c.dense_weight, d.chosen)
    rows["doc2dial passages (dev -> test documents)"] = row
    log(str(row))

    _, med = datasets.beir(datasets.DATA / "medline", "test")
    tuned = _tune(args.work / "gate-medline", med)
    rows["Medline (cross-validated)"] = {"n": tuned.n, "chosen": tuned.chosen.label, "cv": tuned.cv_score,
                                         "depth": tuned.depth.model_dump() if tuned.depth is not None else None}
    log(str(rows["Medline (cross-validated)"]))
    out = {"command": COMMAND, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), "load_avg_1min_end": round(os.getloadavg()[0], 2),
           "cpu_s": round(time.process_time() - cpu, 1), "rows": rows}
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
