"""Train the topic-shift check (src/querywise/understand/followup/topic_shift.json).

    .venv/bin/python -m bench.topic_shift [--reuse]

The check answers, for a message the follow-up gate flagged: does it open a new subject? Rows:
- doc2dial (documents split 60/20/20 by a hash of the document id, as bench/conversations.py):
  every flagged user turn of a real dialogue continues its subject (label 0); each dialogue's
  first turn placed after the first turn of a dialogue about another document opens one (label 1,
  when the gate flags it) -- the changes of subject bench/conversations.py scores.
- TREC CAsT 2019 (topics split 60/20/20 by a hash of the number, as bench/rewrite_cast2019.py):
  every flagged turn a person rewrote continues (0); each topic's first turn placed after the
  previous topic's turns opens a new subject (1, when flagged).

A logistic regression (scikit-learn, balanced classes) is fitted on the train rows of both. The
threshold is chosen on doc2dial's train and val documents, where recall@5 with and without the
standalone form is known per turn: the threshold that keeps most of the follow-up slice's gain
while the changes of subject lose at most `MAX_LOSS` recall@5. Test documents and topics are
scored once, after the choice. Writes the model (with its provenance) into the package and
bench/results/topic_shift.json / .md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench import DATA, RESULTS, ROOT, WORK, log, write_json
from bench.conversations import SPLITS, changes_of_subject, split_of
from bench.rewrite_cast2019 import load_cast
from bench.rewrite_cast2019 import split_of as cast_split_of

COMMAND = ".venv/bin/python -m bench.topic_shift"
MODEL = ROOT / "src" / "querywise" / "understand" / "followup" / "topic_shift.json"
MAX_LOSS = 0.02  # recall@5 the changes of subject may lose on train+val: the target (#14)
ROWS = WORK / "topic_shift_rows.json"  # the features and outcomes of the last run, for --reuse
C = 1.0
THRESHOLDS = [round(0.30 + 0.025 * i, 3) for i in range(25)]


def _row(u: Any, message: str, history: Sequence[Any], **extra: Any) -> dict[str, Any] | None:
    from querywise.understand.followup import check_follow_up, flag_kind, names_its_subject
    from querywise.understand.followup.referent import ANSWER_CHARS
    from querywise.understand.followup.shift import shift_features

    gate = check_follow_up(message, history, catalog=u.catalog)
    if not gate.needs_context:
        return None
    recent = [(t if isinstance(t, str) else t.text)[:ANSWER_CHARS] for t in history[-u.settings.understanding.topic_window :]]
    v = np.asarray(u.embedder.embed([message, *recent]), dtype=np.float32)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    features = shift_features(flag_kind(gate), gate.cues, similarity=float((v[1:] @ v[0]).max()),
                              names_own=names_its_subject(message, catalog=u.catalog), message=message)
    return {"features": features, "message": message, "last": recent[-1] if recent else "", **extra}


def doc2dial_rows(qw: Any, cases: Sequence[Any]) -> list[dict[str, Any]]:
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics

    metrics = parse_metrics(["recall@5"])
    follow = [c for c in cases if "follow_up" in c.slices]
    rows = []
    for label, group in ((0, follow), (1, changes_of_subject(cases))):
        raw = run_arm(group, qw, Arm(name="as_typed", moves=()), metrics)
        move = run_arm(group, qw, Arm(name="follow_up", moves=("follow_up",)), metrics)
        for case, a, b in zip(group, raw.cases, move.cases, strict=True):
            doc = str(next(iter(case.relevant))).split("#")[0]
            row = _row(qw.understander, case.message, case.history, data="doc2dial", split=split_of(doc), label=label,
                       raw=a.scores["recall@5"] or 0.0, move=b.scores["recall@5"] or 0.0)
            if row is not None:
                rows.append(row)
    return rows


def cast_rows(u: Any) -> list[dict[str, Any]]:
    from querywise.evaluation.rewrites import differs

    data, ids = load_cast(DATA)
    rows = []
    starts = [i for i, r in enumerate(data) if not r.history]
    for i, (r, key) in enumerate(zip(data, ids, strict=True)):
        if r.history and differs(r.message, r.standalone):
            row = _row(u, r.message, r.history, data="cast", split=cast_split_of(key), label=0)
            if row is not None:
                rows.append(row)
        if not r.history and i > 0:  # a topic's first turn after the previous topic's turns
            previous = max(s for s in starts if s < i)
            history = [t.message for t in data[previous:i]]
            row = _row(u, r.message, history, data="cast", split=cast_split_of(key), label=1)
            if row is not None:
                rows.append(row)
    return rows


def _doc2dial_effect(rows: Sequence[dict[str, Any]], chance: np.ndarray, threshold: float, n: dict[tuple[int, str], int], parts: Sequence[str]) -> dict[str, float]:
    """Recall@5 gained by the follow-up slice and by the changes of subject (negative: lost)
    over the given splits, the check suppressing the form at or over the threshold."""
    out = {}
    for label, name in ((0, "follow_up_gain"), (1, "change_of_subject_gain")):
        total = sum((r["raw"] if p >= threshold else r["move"]) - r["raw"]
                    for r, p in zip(rows, chance, strict=True) if r["data"] == "doc2dial" and r["label"] == label and r["split"] in parts)
        out[name] = round(total / max(sum(n[(label, s)] for s in parts), 1), 4)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    from sklearn.linear_model import LogisticRegression

    from querywise.chunking import Chunker
    from querywise.config import Settings
    from querywise.evaluation.cases import load_doc2dial
    from querywise.index import Index, build_index
    from querywise.service import QueryWise
    from querywise.understand.followup.shift import shift_features

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse", action="store_true", help=f"refit on the rows of the last run ({ROWS.name}) instead of recomputing them")
    args = parser.parse_args(argv)
    settings = Settings()
    settings = settings.model_copy(update={"understanding": settings.understanding.model_copy(update={"topic_shift": False})})
    chunks, cases = load_doc2dial(DATA / "doc2dial", Chunker())
    if args.reuse and ROWS.exists():
        rows = json.loads(ROWS.read_text(encoding="utf-8"))
    else:
        path = WORK / "eval-doc2dial"
        ix = Index.open(path, settings=settings) if path.exists() else build_index(chunks, path, settings=settings)
        with ix, QueryWise(settings, ix) as qw:
            rows = doc2dial_rows(qw, cases) + cast_rows(qw.understander)
        ROWS.write_text(json.dumps(rows), encoding="utf-8")
    # every case of a slice counts in its denominator, flagged or not (as bench/conversations.py scores it)
    follow = [c for c in cases if "follow_up" in c.slices]
    n = {(0, s): sum(split_of(str(next(iter(c.relevant))).split("#")[0]) == s for c in follow) for s in SPLITS}
    n |= {(1, s): sum(split_of(str(next(iter(c.relevant))).split("#")[0]) == s for c in changes_of_subject(cases)) for s in SPLITS}

    names = list(shift_features("pointer", (), similarity=0.0, names_own=False, message=""))
    X = np.array([[r["features"][k] for k in names] for r in rows])
    y = np.array([r["label"] for r in rows])
    train = np.array([r["split"] == "train" for r in rows])
    fit = LogisticRegression(C=C, max_iter=5000, class_weight="balanced").fit(X[train], y[train])
    chance = fit.predict_proba(X)[:, 1]

    sweep = [{"threshold": t, **_doc2dial_effect(rows, chance, t, n, ("train", "val"))} for t in THRESHOLDS]
    allowed = [s for s in sweep if s["change_of_subject_gain"] >= -MAX_LOSS]
    chosen = max(allowed, key=lambda s: (s["follow_up_gain"], s["threshold"])) if allowed else max(sweep, key=lambda s: s["change_of_subject_gain"])
    threshold = chosen["threshold"]

    def report(part: str) -> dict[str, Any]:
        parts = SPLITS if part == "all" else (part,)
        cast = [(r, p) for r, p in zip(rows, chance, strict=True) if r["data"] == "cast" and r["split"] in parts]
        kept = [p < threshold for r, p in cast if r["label"] == 0]
        caught = [p >= threshold for r, p in cast if r["label"] == 1]
        return {"doc2dial": _doc2dial_effect(rows, chance, threshold, n, parts),
                "doc2dial_without_check": _doc2dial_effect(rows, chance, 2.0, n, parts),
                "cast_follow_ups_kept": round(float(np.mean(kept)), 4) if kept else None, "cast_follow_ups": len(kept),
                "cast_new_subjects_caught": round(float(np.mean(caught)), 4) if caught else None, "cast_new_subjects": len(caught)}

    counts = {f"{d}/{s}/{lab}": sum(1 for r in rows if (r["data"], r["split"], r["label"]) == (d, s, lab))
              for d in ("doc2dial", "cast") for s in SPLITS for lab in (0, 1)}
    model = {
        "weights": {k: round(float(w), 5) for k, w in zip(names, fit.coef_[0], strict=True)},
        "intercept": round(float(fit.intercept_[0]), 5),
        "threshold": threshold,
        "provenance": {
            "command": COMMAND, "fit": f"sklearn LogisticRegression(C={C}, class_weight='balanced') on the train rows",
            "train": "doc2dial train documents + TREC CAsT 2019 train topics (see bench/topic_shift.py)",
            "threshold": f"most follow-up gain on doc2dial train+val with changes of subject losing <= {MAX_LOSS} recall@5",
            "rows": counts,
            "digest": hashlib.sha1(json.dumps([r["message"] for r in rows if r["split"] == "train"]).encode()).hexdigest()[:12],
        },
    }
    MODEL.write_text(json.dumps(model, indent=1) + "\n", encoding="utf-8")
    result = {"model": model, "sweep_train_val": sweep, "chosen": chosen, "splits": {p: report(p) for p in (*SPLITS, "all")}}
    write_json("topic_shift.json", result, command=COMMAND)
    (RESULTS / "topic_shift.md").write_text(markdown(result), encoding="utf-8")
    log(markdown(result))


def markdown(result: dict[str, Any]) -> str:
    lines = ["# The topic-shift check: trained, and what it saves", "", f"Command: `{COMMAND}` (writes the model into "
             "`src/querywise/understand/followup/topic_shift.json`).", "",
             f"Logistic regression on the gate's flagged turns: doc2dial train documents and CAsT 2019 train topics. "
             f"Threshold {result['model']['threshold']} chosen on doc2dial train+val (changes of subject losing <= {MAX_LOSS} "
             "recall@5, most follow-up gain); test scored once after. doc2dial: recall@5 the standalone form adds over the "
             "message as typed, over each slice's turns (flagged or not); CAsT: share of a person's rewritten follow-ups the "
             "check leaves to the follow-up move, and share of topic starts it catches.", "",
             "| split | follow-up gain (no check) | follow-up gain | changes of subject (no check) | changes of subject | "
             "CAsT follow-ups kept | CAsT topic starts caught |", "|---|---|---|---|---|---|---|"]
    for part, r in result["splits"].items():
        d, w = r["doc2dial"], r["doc2dial_without_check"]
        lines.append(f"| {part} | {w['follow_up_gain']:+.3f} | {d['follow_up_gain']:+.3f} | {w['change_of_subject_gain']:+.3f} | "
                     f"{d['change_of_subject_gain']:+.3f} | {r['cast_follow_ups_kept']} ({r['cast_follow_ups']}) | "
                     f"{r['cast_new_subjects_caught']} ({r['cast_new_subjects']}) |")
    lines += ["", "Weights:", "", "| feature | weight |", "|---|---|"]
    lines += [f"| {k} | {v:+.3f} |" for k, v in result["model"]["weights"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
