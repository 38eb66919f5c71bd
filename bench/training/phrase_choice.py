"""Train the follow-up's phrase choice (src/querywise/understand/followup/phrase_choice.json, #34).

    .venv/bin/python -m bench.training.phrase_choice [--reuse]

Not a benchmark: it fits and writes a file the library ships (as bench/training/topic_shift.py
does), and the suite never runs it. bench.understanding.followup_gate measures the result.

Rows (training and choice only): the team's development conversations with answers in the history
(bench/understanding/dialogues_passages.jsonl, dialogues_passages_dev.jsonl, dialogues_read.jsonl,
and the dialogues_train*.jsonl files) and TREC CAsT 2019 (user turns only). Never the held-out
files (dialogues_heldout.jsonl, dialogues_passages_2/3/4.jsonl) nor CAsT 2020: those are reported on by
followup_gate, once, after the choice.

Each flagged row runs the deployed follow-up move with the choice recording instead of choosing
(`choice.candidates` and `choice.phrase_features` on the rules' form); each candidate is labelled 1
when at least half the terms it adds are terms the person's rewrite adds. A logistic regression
(scikit-learn) is cross-validated by conversation (5 folds, never by turn); for each
regularisation C and threshold the out-of-fold chances compose each row's form (`choice.compose`)
and the pooled added-term recall / precision are computed as followup_gate computes them. Chosen:
the highest lower of recall and precision (the bar is both >= 0.50) on the rows with answers in the
history whose CAsT 2019 F1 loses at most `MAX_CAST_LOSS` to the rules'. The model is then fitted on every row with the chosen C.
As a check (never a choice), the chosen setting is also scored with each file -- a writer -- left out
in turn (`by_file`), nearer a new deployment than folds whose conversations share a writer.
Writes the model (with its provenance) into the package and bench/results/phrase_choice.json / .md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bench import ROOT, WORK, datasets, log
from bench.report import RESULTS, publish

COMMAND = ".venv/bin/python -m bench.training.phrase_choice"
MODEL = ROOT / "src" / "querywise" / "understand" / "followup" / "phrase_choice.json"
ROWS = WORK / "phrase_choice_rows.json"  # the candidates of the last run, for --reuse
HERE = ROOT / "bench" / "understanding"
DEV_FILES = ("passages", "passages_dev", "read")
FOLDS = 5
CS = (0.03, 0.1, 0.3, 1.0, 3.0)
THRESHOLDS = [round(0.3 + 0.025 * i, 3) for i in range(27)]
FLOORS = (1.0, 0.4, 0.2, 0.0)  # 1.0: no floor
CAPS = (1, 2, 99)
MAX_CAST_LOSS = 0.01  # added-term F1 CAsT 2019 may lose to the rules'


def _dialogue_rows() -> list[tuple[str, Any, str]]:
    """(source, row, conversation) of the development files, and the train rows when there."""
    from querywise.evaluation.rewrites import load_rewrite_rows

    out: list[tuple[str, Any, str]] = []
    paths = {name: HERE / f"dialogues_{name}.jsonl" for name in DEV_FILES}
    # Training conversations written for the fit (blind to the rules): dialogues_train.jsonl, _train_2.jsonl, ...
    paths.update({path.stem.removeprefix("dialogues_"): path for path in sorted(HERE.glob("dialogues_train*.jsonl"))})
    for name, path in paths.items():
        for row in load_rewrite_rows(path):
            opening = row.history[0].text if row.history else row.message
            out.append((name, row, f"{name}:{opening[:80]}"))
    return out


def collect() -> list[dict[str, Any]]:
    """Each row's searched text under the rules, and the candidates the choice would see."""
    from querywise.config import Settings
    from querywise.evaluation.rewrites import plan_rewriter
    from querywise.service import QueryWise
    from querywise.understand.followup import choice

    recorded: dict[str, Any] = {}

    class Recorder:
        def choose(self, message: str, history: Sequence[Any], form: Any, gate: Any, *, embedder: Any, catalog: Any = None) -> tuple[str, list[Any]]:
            found = choice.candidates(message, history, form, catalog=catalog)
            feats = choice.phrase_features(message, gate, found, choice.candidate_cosines(message, found, embedder))
            recorded.update(form=form, found=found, features=feats)
            return form.text, []

    cast, ids = datasets.cast2019()
    rows = [*_dialogue_rows(), *(("cast2019", r, f"cast2019:{k.split('_')[0]}") for r, k in zip(cast, ids, strict=True))]
    settings = Settings()
    settings = settings.model_copy(update={"understanding": settings.understanding.model_copy(update={"phrase_choice": "always"})})
    out = []
    with QueryWise(settings) as qw, mock.patch("querywise.understand.followup.move.phrase_model", return_value=Recorder()):
        searched = plan_rewriter(qw)
        for source, row, conversation in rows:
            recorded.clear()
            old = searched(row.message, row.history)
            item: dict[str, Any] = {"source": source, "conversation": conversation, "message": row.message, "standalone": row.standalone, "old": old,
                                    "answered": choice.answered_before(row.history)}
            if recorded:
                form, found = recorded["form"], recorded["found"]
                item["form"] = {"text": form.text, "method": form.method, "answer": form.answer}
                item["candidates"] = [{"text": c.text, "key": list(c.key), "new_terms": sorted(c.new_terms), "placed": c.placed,
                                       "previous_turn": c.previous_turn, "features": f} for c, f in zip(found, recorded["features"], strict=True)]
            out.append(item)
    return out


def compose_row(item: dict[str, Any], keep: Sequence[bool]) -> str:
    """The searched text of a row when its candidates are kept as `keep` says (as move.py searches it)."""
    from querywise.understand.followup.choice import Candidate, compose
    from querywise.understand.followup.tracker import Standalone

    if "form" not in item:
        return str(item["old"])
    f = item["form"]
    found = [Candidate(c["text"], tuple(c["key"]), frozenset(c["new_terms"]), "", placed=c["placed"], previous_turn=c["previous_turn"])
             for c in item["candidates"]]
    form = Standalone(f["text"], f["method"], ())
    text = compose(item["message"], form, found, keep)
    if text == f["text"]:
        return str(item["old"])
    if text == item["message"]:
        return f"{text.rstrip()} {f['answer']}" if f["answer"] else text
    return text


def added(items: Sequence[dict[str, Any]], texts: Sequence[str]) -> dict[str, float]:
    """Pooled added-term recall / precision / F1 (as `evaluate_rewrites` counts them)."""
    from querywise.text import analyze

    both = person = form = 0
    for item, text in zip(items, texts, strict=True):
        own = set(analyze(item["message"]))
        p, f = set(analyze(item["standalone"])) - own, set(analyze(text)) - own
        both, person, form = both + len(p & f), person + len(p), form + len(f)
    r, pr = both / max(person, 1), both / max(form, 1)
    return {"recall": round(r, 4), "precision": round(pr, 4), "f1": round(2 * r * pr / max(r + pr, 1e-9), 4)}


def _low(fig: dict[str, float]) -> float:
    return min(fig["recall"], fig["precision"])


def label(item: dict[str, Any], c: dict[str, Any]) -> int:
    from querywise.text import analyze

    person = set(analyze(item["standalone"])) - set(analyze(item["message"]))
    new = set(c["new_terms"])
    return int(len(new & person) * 2 >= len(new))


def train(items: Sequence[dict[str, Any]], cs: Sequence[float] = CS, thresholds: Sequence[float] = THRESHOLDS) -> tuple[Any, dict[str, Any]]:
    """The model fitted on every candidate of `items` with the C, threshold, floor and cap the
    cross-validation by conversation chose, and the figures that chose them."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, LeaveOneGroupOut

    from querywise.understand.followup.choice import PhraseModel, decide

    names = list(next(c["features"] for it in items for c in it.get("candidates", [])))
    flat = [(i, j) for i, it in enumerate(items) for j, _ in enumerate(it.get("candidates", []))]
    X = np.array([[items[i]["candidates"][j]["features"][k] for k in names] for i, j in flat])
    y = np.array([label(items[i], items[i]["candidates"][j]) for i, j in flat])
    groups = np.array([items[i]["conversation"] for i, _ in flat])
    parts = {"answers": [i for i, it in enumerate(items) if it["source"] != "cast2019"], "cast2019": [i for i, it in enumerate(items) if it["source"] == "cast2019"]}
    parts.update({s: [i for i, it in enumerate(items) if it["source"] == s] for s in sorted({it["source"] for it in items})})
    # Row by row, as `phrase_choice = "answers"` decides: whether the history holds an assistant's answer.
    parts.update({"answered": [i for i, it in enumerate(items) if it.get("answered")], "unanswered": [i for i, it in enumerate(items) if not it.get("answered")]})

    def figures(chance: np.ndarray, threshold: float, floor: float, cap: int) -> dict[str, dict[str, float]]:
        by_row: dict[int, list[float]] = {}
        for (i, _), p in zip(flat, chance, strict=True):
            by_row.setdefault(i, []).append(float(p))
        keep = {i: decide(ps, threshold, floor, cap) for i, ps in by_row.items()}
        texts = [compose_row(it, keep.get(i, [])) for i, it in enumerate(items)]
        return {name: added([items[i] for i in idx], [texts[i] for i in idx]) for name, idx in parts.items()}

    rules = {name: added([items[i] for i in idx], [items[i]["old"] for i in idx]) for name, idx in parts.items()}
    folds = GroupKFold(n_splits=FOLDS)
    sweep: list[dict[str, Any]] = []
    for C in cs:
        chance = np.zeros(len(y))
        for fold_train, fold_test in folds.split(X, y, groups):
            fit = LogisticRegression(C=C, max_iter=5000, class_weight="balanced").fit(X[fold_train], y[fold_train])
            chance[fold_test] = fit.predict_proba(X[fold_test])[:, 1]
        for t in thresholds:
            for floor in FLOORS:
                for cap in CAPS:
                    if floor < t:
                        sweep.append({"C": C, "threshold": t, "floor": floor, "cap": cap, **figures(chance, t, floor, cap)})
        log(f"C={C}: best min(recall, precision) on answers {max(_low(s['answers']) for s in sweep if s['C'] == C):.3f}")
    allowed = [s for s in sweep if s["cast2019"]["f1"] >= rules["cast2019"]["f1"] - MAX_CAST_LOSS] or sweep
    # The maintainers' bar is recall and precision both >= 0.50: the lower of the two is what to raise.
    chosen = max(allowed, key=lambda s: (_low(s["answers"]), s["answers"]["f1"], -s["C"], s["threshold"], s["floor"], -s["cap"]))
    # A check, not a choice: each file left out in turn at the chosen setting. The files are
    # different writers' (CAsT 2019 one more), so this is nearer a new deployment's figure than
    # folds by conversation, whose other conversations share a writer with the held-out one.
    by_file = np.zeros(len(y))
    sources = np.array([items[i]["source"] for i, _ in flat])
    for fold_train, fold_test in LeaveOneGroupOut().split(X, y, sources):
        fit = LogisticRegression(C=chosen["C"], max_iter=5000, class_weight="balanced").fit(X[fold_train], y[fold_train])
        by_file[fold_test] = fit.predict_proba(X[fold_test])[:, 1]
    out_of_file = figures(by_file, chosen["threshold"], chosen["floor"], chosen["cap"])
    fit = LogisticRegression(C=chosen["C"], max_iter=5000, class_weight="balanced").fit(X, y)
    weights = {k: round(float(w), 5) for k, w in zip(names, fit.coef_[0], strict=True)}
    model = PhraseModel(weights=weights, intercept=round(float(fit.intercept_[0]), 5), threshold=chosen["threshold"], floor=chosen["floor"],
                        cap=chosen["cap"], provenance={
        "command": COMMAND, "fit": f"sklearn LogisticRegression(C={chosen['C']}, class_weight='balanced') on every candidate of the rows",
        "train": "dialogues_passages, dialogues_passages_dev, dialogues_read, dialogues_train*.jsonl and CAsT 2019 (see bench/training/phrase_choice.py)",
        "choice": f"C, threshold, floor and cap with the highest {FOLDS}-fold (by conversation) min(added-term recall, precision) on the rows with answers, CAsT 2019 losing <= {MAX_CAST_LOSS}",
        "rows": {name: len(idx) for name, idx in parts.items()}, "candidates": len(y), "positives": int(y.sum()),
        "digest": hashlib.sha1(json.dumps([it["message"] for it in items]).encode()).hexdigest()[:12],
    })
    top = sorted(sweep, key=lambda s: -_low(s["answers"]))[:15]
    return model, {"model": model.model_dump(), "rules": rules, "chosen_cv": chosen, "by_file": out_of_file, "sweep_top": top, "folds": FOLDS}


def main(argv: Sequence[str] | None = None) -> None:
    from querywise.understand.followup.choice import with_pairs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse", action="store_true", help=f"refit on the rows of the last run ({ROWS.name})")
    parser.add_argument("--reported", type=Path, help="no fit: add the report sets' figures to the page, from followup_gate's JSON "
                        "pages run with the choice off (DIR/rules) and on (DIR/learnt)")
    parser.add_argument("--note", action="append", default=[], help="with --reported: a line for the page (what else was scored, and when)")
    args = parser.parse_args(argv)
    if args.reported is not None:
        result = json.loads((RESULTS / "phrase_choice.json").read_text(encoding="utf-8"))
        result["reported"] = reported(args.reported)
        result["notes"] = args.note
        result.pop("machine", None)
        publish("phrase_choice", result, command=result.get("command", COMMAND), render=markdown)
        return
    if args.reuse and ROWS.exists():
        items = json.loads(ROWS.read_text(encoding="utf-8"))
        for it in items:  # products of features are derived from the recorded ones (`choice.with_pairs`)
            for c in it.get("candidates", []):
                c["features"] = with_pairs(c["features"])
    else:
        items = collect()
        ROWS.parent.mkdir(parents=True, exist_ok=True)  # bench/work is not in a fresh clone
        ROWS.write_text(json.dumps(items), encoding="utf-8")
    model, result = train(items)
    MODEL.write_text(json.dumps(model.model_dump(), indent=1) + "\n", encoding="utf-8")
    path = publish("phrase_choice", result, command=COMMAND, render=markdown)
    log(Path(path).with_suffix(".md").read_text(encoding="utf-8"))


#: The report sets (never trained or chosen on), as followup_gate pages them: file, part.
REPORTED = {"CAsT 2020": ("rewrite_cast2020", None), "dialogues_heldout": ("rewrite_dialogues", "heldout"),
            "passages_2 (held out)": ("rewrite_passages_2", "all"), "passages_3 (held out)": ("rewrite_passages_3", "all"),
            "passages_4 (held out)": ("rewrite_passages_4", "all")}


def reported(folder: Path) -> dict[str, dict[str, Any]]:
    """Added-term recall / precision of each report set with the rules' form and with the learnt choice."""
    out: dict[str, dict[str, Any]] = {}
    for name, (page, part) in REPORTED.items():
        row: dict[str, Any] = {}
        for how in ("rules", "learnt"):
            path = folder / how / f"{page}.json"
            if not path.exists():
                continue
            d = json.loads(path.read_text(encoding="utf-8"))
            fig = d["standalone_forms"]["querywise (deterministic plan)"]["all"] if part is None else d[part]
            row[how] = {"recall": fig["added_term_recall"], "precision": fig["added_term_precision"]}
        out[name] = row
    return out


def markdown(result: dict[str, Any]) -> str:
    m, r, c = result["model"], result["rules"], result["chosen_cv"]
    lines = ["# The follow-up's phrase choice: learnt, cross-validated by conversation", "",
             f"Command: `{result['machine']['command']}` (writes `src/querywise/understand/followup/phrase_choice.json`).", "",
             f"Logistic regression over every candidate phrase of the flagged rows; {result['folds']}-fold cross-validation by "
             "conversation; C and the threshold chosen on the out-of-fold figures (the highest of added-term recall and precision's lower one on the rows with answers, "
             f"CAsT 2019 losing <= {MAX_CAST_LOSS}). Chosen: C = {c['C']}, threshold {c['threshold']}, "
             f"floor {c['floor']} (the likeliest phrase kept at that chance when none reaches the threshold; 1.0: none), cap {c['cap']} phrases.", "",
             "Added-term recall / precision (F1), pooled, out-of-fold (training rows only; held-out sets: see below). "
             "The rules were written reading passages, passages_dev and read, so their column is in-sample there; the train rows "
             "(bench/understanding/dialogues_train*.jsonl, written blind to the rules) are new to both. answers: every row but CAsT 2019.", "",
             "The last column is a check, not what chose: the chosen setting with each file (a writer) left out in turn, "
             "the model fitted on the others.", "",
             "| rows | n | rules | learnt choice (CV) | learnt, file left out |", "|---|---|---|---|---|"]
    by_file = result.get("by_file", {})
    for name, fig in r.items():
        n = m["provenance"]["rows"].get(name, "")
        out = f"{by_file[name]['recall']:.3f} / {by_file[name]['precision']:.3f} ({by_file[name]['f1']:.3f})" if name in by_file else "-"
        lines.append(f"| {name} | {n} | {fig['recall']:.3f} / {fig['precision']:.3f} ({fig['f1']:.3f}) | "
                     f"{c[name]['recall']:.3f} / {c[name]['precision']:.3f} ({c[name]['f1']:.3f}) | {out} |")
    lines += ["", "Top of the sweep (answers: the lower of recall and precision):", "", "| C | threshold | floor | cap | answers R / P | CAsT 2019 R / P |", "|---|---|---|---|---|---|"]
    lines += [f"| {s['C']} | {s['threshold']} | {s['floor']} | {s['cap']} | {s['answers']['recall']:.3f} / {s['answers']['precision']:.3f} | "
              f"{s['cast2019']['recall']:.3f} / {s['cast2019']['precision']:.3f} |" for s in result["sweep_top"]]
    # The default is read off the cross-validated figures, never off the report sets below.
    lines += ["", f"Default `phrase_choice = \"answers\"`: the choice runs where the row's history holds an assistant's answer. Out of fold, "
              f"the lower of recall and precision rises on those rows ({_low(r['answered']):.3f} -> {_low(c['answered']):.3f}) "
              f"and falls on rows with user turns only ({_low(r['unanswered']):.3f} -> {_low(c['unanswered']):.3f}: CAsT 2019 and the dialogues' first turns). "
              "So CAsT 2020 (no answers in its file) keeps the rules' form."]
    if result.get("reported"):
        heads = {"rules": "rules (`\"off\"`)", "learnt": "learnt choice (`\"always\"`)", "default": "default (`\"answers\"`)"}
        shown = [h for h in heads if any(h in row for row in result["reported"].values())]
        lines += ["", "Reported after the choice (`python -m bench.understanding.followup_gate --year 2020 | dialogues | passages_2 | passages_3 | passages_4`), "
                  "added-term recall / precision:", "",
                  "| set | " + " | ".join(heads[h] for h in shown) + " |", "|---|" + "---|" * len(shown)]
        for name, row in result["reported"].items():
            lines.append(f"| {name} | " + " | ".join(f"{row[h]['recall']:.3f} / {row[h]['precision']:.3f}" if h in row else "-" for h in shown) + " |")
        lines += ["", *(f"- {note}" for note in result.get("notes", []))]
    lines += ["", "Weights:", "", "| feature | weight |", "|---|---|"] + [f"| {k} | {v:+.3f} |" for k, v in m["weights"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
