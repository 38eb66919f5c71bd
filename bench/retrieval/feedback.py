"""Pseudo-relevance feedback for BM25 (`[index] feedback_docs`, `tune --feedback`), chosen on one split, reported on another.

    .venv/bin/python -m bench.retrieval.feedback

Per collection, `querywise tune`'s procedure with `feedback=True` chooses the fusion and then the
feedback setting on the dev split; on the test split the chosen fusion is scored without feedback
and with the feedback setting that was best on dev (whether or not tune wrote it), messages as
typed (no moves), nDCG@10 per case, paired: mean difference, its standard error and the 95%
bootstrap interval (seed 42).
- SciFact (BEIR): `querywise index` as the README types it (10,122 chunks of at most 1,000
  characters, judged per abstract); dev = the train qrels (809), test = test (300).
- doc2dial passages: bench/retrieval/fusion.py's cases (first turns and the standalone slice, the
  chunk-level gold), split by document (`bench.datasets.doc2dial_split`): dev = train + val.
- Medline (BEIR, 30 test queries, no other split): tune's own cross-validation on its queries
  (the held-out gain of choosing feedback), beside the test effect of the setting SciFact's train
  chose and of the one doc2dial's dev chose.
Builds its indexes under bench/work/feedback-* (vectors from the embedding cache when there).
Writes bench/results/feedback.json and feedback.md.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from bench import DATA, WORK, datasets, log
from bench.datasets import doc2dial_split, document_of
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.retrieval.feedback"


def _user_index(source: str) -> Any:
    """`querywise index SOURCE --skip-invalid` into bench/work, as the README types it."""
    path = WORK / f"feedback-{source}"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "querywise", "index", str(DATA / source), "--index", str(path), "--skip-invalid"], check=True)
    return path


def _scores(cases: Sequence[Any], qw: Any) -> list[float]:
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metric

    run = run_arm(cases, qw, Arm(name="as typed", mode="hybrid"), [parse_metric("ndcg@10")])
    return [r.scores["ndcg@10"] or 0.0 for r in run.cases]


def _with(settings: Any, fusion: Any, fb: Any) -> Any:
    update: dict[str, Any] = {"fusion": fusion.fusion, "dense_weight": fusion.dense_weight}
    if fusion.mode != "hybrid":  # a single mode as the convex weight's end (cli.tune.as_index_settings)
        update = {"fusion": "convex", "dense_weight": 1.0 if fusion.mode == "dense" else 0.0}
    if fb is not None:
        update |= {"feedback_docs": fb.docs, "feedback_terms": fb.terms, "feedback_weight": fb.weight}
    return settings.model_copy(update={"index": settings.index.model_copy(update=update)})


def _paired(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    from querywise.evaluation.stats import paired_difference

    d = paired_difference(a, b)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / len(diffs)
    se = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (len(diffs) - 1) / len(diffs))
    return {"before": round(sum(a) / len(a), 4), "after": round(sum(b) / len(b), 4), "delta": round(d.delta, 4), "se": round(se, 4),
            "low": round(d.low, 4), "high": round(d.high, 4)}


def _report(path: Any, name: str, test: Sequence[Any], fusion: Any, fb: Any, chose: str) -> dict[str, Any]:
    """`test` under `fusion`, without and with `fb`, through an index opened with each setting."""
    from querywise.config import Settings
    from querywise.index import Index
    from querywise.service import QueryWise

    runs = []
    for setting in (None, fb):
        s = _with(Settings(), fusion, setting)
        with Index.open(path, settings=s) as ix, QueryWise(s, ix) as qw:
            runs.append(_scores(test, qw))
    row = {"collection": name, "n": len(test), "chosen_on": chose, "fusion": fusion.label, "feedback": fb.label, **_paired(*runs)}
    log(str(row))
    return row


def _tune(path: Any, dev: Sequence[Any]) -> Any:
    from querywise.config import Settings
    from querywise.evaluation.metrics import parse_metric
    from querywise.evaluation.tune import tune
    from querywise.index import Index
    from querywise.service import QueryWise

    with Index.open(path, settings=Settings()) as ix, QueryWise(Settings(), ix) as qw:
        return tune(dev, qw, parse_metric("ndcg@10"), feedback=True)


def _choice(name: str, chose: str, tuned: Any) -> dict[str, Any]:
    fb = tuned.feedback
    row = {"collection": name, "chose_on": chose, "n": tuned.n, "fusion": tuned.chosen.label, "best": fb.best.label,
           "written": fb.chosen.label if fb.chosen else None, "without": fb.without, "best_score": fb.scores[fb.best.label],
           "cv_gain": fb.cv_gain, "cv_low": fb.cv_gain_low, "cv_high": fb.cv_gain_high}
    log(str(row))
    return row


def main() -> None:
    from querywise.chunking import Chunker
    from querywise.config import Settings
    from querywise.evaluation.cases import read_beir
    from querywise.index import build_index

    choices, rows = [], []
    scifact = _user_index("scifact")
    train, test = read_beir(DATA / "scifact", "train", skip_invalid=True).cases, read_beir(DATA / "scifact", "test", skip_invalid=True).cases
    sf = _tune(scifact, train)
    choices.append(_choice("SciFact", "train (809)", sf))
    rows.append(_report(scifact, "SciFact", test, sf.chosen, sf.feedback.best, "SciFact train"))

    chunks, cases = datasets.doc2dial(Chunker())
    d2d = WORK / "feedback-doc2dial"
    if not d2d.exists():
        build_index(chunks, d2d, settings=Settings()).close()
    alone = [c.model_copy(update={"history": ()}) for c in cases if not c.history or "standalone" in c.slices]
    dev = [c for c in alone if doc2dial_split(document_of(c)) != "test"]
    held = [c for c in alone if doc2dial_split(document_of(c)) == "test"]
    dd = _tune(d2d, dev)
    choices.append(_choice("doc2dial passages", f"dev ({len(dev)})", dd))
    rows.append(_report(d2d, "doc2dial passages", held, dd.chosen, dd.feedback.best, "doc2dial dev"))

    medline = _user_index("medline")
    med = read_beir(DATA / "medline", "test", skip_invalid=True).cases
    choices.append(_choice("Medline", "its own queries, cross-validated (30)", _tune(medline, med)))
    for chose, tuned in (("SciFact train", sf), ("doc2dial dev", dd)):
        rows.append(_report(medline, "Medline", med, tuned.chosen, tuned.feedback.best, chose))
    publish("feedback", {"choices": choices, "rows": rows}, command=COMMAND, render=lambda d: markdown(d, d["machine"]["command"]))
    log(markdown({"choices": choices, "rows": rows}, COMMAND))


def markdown(data: dict[str, Any], command: str) -> str:
    lines = ["# Pseudo-relevance feedback for BM25: chosen on one split, reported on another", "", f"Command: `{command}`.", "",
             "`querywise tune --feedback` on the dev split: the fusion, then the feedback setting (docs x terms x weight), "
             "cross-validated against none; `written` is what `--write-config` writes (None: no feedback).", "",
             "| collection | chosen on | fusion | best feedback | written | none | best | held-out gain [95%] |", "|---|---|---|---|---|---|---|---|"]
    for c in data["choices"]:
        lines.append(f"| {c['collection']} | {c['chose_on']} | {c['fusion']} | {c['best']} | {c['written']} | {c['without']:.4f} | "
                     f"{c['best_score']:.4f} | {c['cv_gain']:+.4f} [{c['cv_low']:+.4f}, {c['cv_high']:+.4f}] |")
    lines += ["", "On the held-out split: the fusion chosen on dev, without and with the feedback setting best on dev "
              "(nDCG@10, messages as typed, paired per case: SE and 95% bootstrap interval).", "",
              "| collection | queries | chosen on | fusion | feedback | without | with | delta ± SE | 95% interval |", "|---|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        lines.append(f"| {r['collection']} | {r['n']} | {r['chosen_on']} | {r['fusion']} | {r['feedback']} | {r['before']:.4f} | "
                     f"{r['after']:.4f} | {r['delta']:+.4f} ± {r['se']:.4f} | [{r['low']:+.4f}, {r['high']:+.4f}] |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
