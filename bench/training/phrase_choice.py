"""Train the follow-up's learnt choice (src/querywise/understand/followup/phrase_choice.json, #34).

    .venv/bin/python -m bench.training.phrase_choice [--reuse]

Not a benchmark: it fits and writes a file the library ships (as bench/training/topic_shift.py
does), and the suite never runs it. bench.understanding.followup_gate measures the result.

Rows (training and choice only): the team's development conversations with answers in the history
(bench/understanding/dialogues_passages.jsonl, dialogues_passages_dev.jsonl, dialogues_read.jsonl,
and the dialogues_train*.jsonl files) and TREC CAsT 2019 (user turns only). Never the held-out
files (dialogues_heldout.jsonl, dialogues_passages_2/3/4.jsonl) nor CAsT 2020: those are reported on by
followup_gate, once, after the choice.

Each flagged row runs the deployed follow-up move with the choice recording instead of choosing:
every word it offers (`words.offered_words`) with its features, labelled 1 when the person's rewrite
adds that word. Gradient-boosted trees (scikit-learn's HistGradientBoostingClassifier) are fitted with each file -- a writer, nearer a
new deployment than folds whose conversations share one -- left out in turn; for each
threshold and cap the out-of-file chances compose each row's searched text
(`words.compose_words`) and its added-term recall / precision are computed as followup_gate
computes them, on the rows with answers in the history (where the default runs the choice).
Chosen: the setting that meets the maintainers' bar (recall and precision >= 0.50) on the most
files left out (files with >= `MIN_ROWS` such rows), then the highest mean over those files of
the lower of the two, then the pooled F1. The model is then fitted on every row, and its trees written out
(`exported`) so the package reads them with numpy alone.
Writes the model (with its provenance) into the package and bench/results/phrase_choice.json / .md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from bench import ROOT, WORK, datasets, log
from bench.report import RESULTS, publish

COMMAND = ".venv/bin/python -m bench.training.phrase_choice"
MODEL = ROOT / "src" / "querywise" / "understand" / "followup" / "phrase_choice.json"
ROWS = WORK / "phrase_choice_rows.json"  # the words of the last run, for --reuse
HERE = ROOT / "bench" / "understanding"
DEV_FILES = ("passages", "passages_dev", "read")
#: Gradient boosting (scikit-learn's HistGradientBoostingClassifier): trees, since what a feature says
#: depends on the others (an opening's word is the person's after a pronoun, not once the talk moved on).
#: Three settings tried with each file left out (22 files): this, 300 rounds at 0.05, and 15 leaves of at
#: least 1,000 words (with early stopping, then dropped): mean of each file's lower figure 0.496, 0.497, 0.493; the
#: smallest model kept (0.496 without early stopping).
BOOSTING = {"max_iter": 150, "learning_rate": 0.1, "max_leaf_nodes": 31, "min_samples_leaf": 200}
THRESHOLDS = [round(0.5 + 0.05 * i, 2) for i in range(10)]
CAPS = (3, 5, 8, 99)
MIN_ROWS = 30  # a file counts towards the bar with at least this many rows with answers
BAR = 0.5  # the maintainers' bar on added-term recall and precision


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
    """Each row's searched text under the rules, and the words the choice would see."""
    from querywise.config import Settings
    from querywise.evaluation.rewrites import plan_rewriter
    from querywise.service import QueryWise
    from querywise.understand.followup import choice
    from querywise.understand.followup.words import offered_words

    recorded: dict[str, Any] = {}

    def record(message: str, history: Sequence[Any], form: Any, *, catalog: Any, embedder: Any) -> tuple[Any, str]:
        """In place of move._chosen: what the choice would weigh, and the rules' form unchanged."""
        found = choice.candidates(message, history, form, catalog=catalog)
        feats = choice.phrase_features(found, choice.candidate_cosines(message, found, embedder))
        recorded.update(form=form, placed=choice.placed_part(message, form, found),
                        words=offered_words(message, history, form, found, feats, choice.subject_of(found)))
        return form, ""

    cast, ids = datasets.cast2019()
    rows = [*_dialogue_rows(), *(("cast2019", r, f"cast2019:{k.split('_')[0]}") for r, k in zip(cast, ids, strict=True))]
    settings = Settings()
    settings = settings.model_copy(update={"understanding": settings.understanding.model_copy(update={"phrase_choice": "always"})})
    out = []
    with QueryWise(settings) as qw, mock.patch("querywise.understand.followup.move._chosen", side_effect=record):
        searched = plan_rewriter(qw)
        for source, row, conversation in rows:
            recorded.clear()
            old = searched(row.message, row.history)
            item: dict[str, Any] = {"source": source, "conversation": conversation, "message": row.message, "standalone": row.standalone, "old": old,
                                    "answered": choice.answered_before(row.history)}
            if recorded:
                form = recorded["form"]
                item["form"] = {"text": form.text, "method": form.method, "answer": form.answer, "placed": recorded["placed"]}
                item["words"] = [{"term": w.term, "surface": w.surface, "features": w.features} for w in recorded["words"]]
            out.append(item)
    return out


def compose_row(item: dict[str, Any], keep: Sequence[bool]) -> str:
    """The searched text of a row when its words are kept as `keep` says (as move.py searches it)."""
    from querywise.understand.followup.tracker import Standalone
    from querywise.understand.followup.words import Word, compose_words

    if "form" not in item:
        return str(item["old"])
    f = item["form"]
    words = [Word(w["term"], w["surface"], {}) for w in item["words"]]
    text = compose_words(item["message"], Standalone(f["text"], f["method"], ()), f["placed"], words, keep)
    # Nothing kept: the message as typed (the answer's words were offered word by word and none kept).
    return str(item["old"]) if text == f["text"] and text != item["message"] else text


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


def person_adds(item: dict[str, Any]) -> set[str]:
    """The terms the person's rewrite adds to the message: a word is labelled 1 when it is one."""
    from querywise.text import analyze

    return set(analyze(item["standalone"])) - set(analyze(item["message"]))


def _bar(figs: dict[str, dict[str, float]], files: Sequence[str]) -> tuple[int, float]:
    """Files (of `files`) whose recall and precision both meet the bar, and the mean of their lower one."""
    return (sum(figs[f]["recall"] >= BAR and figs[f]["precision"] >= BAR for f in files),
            round(float(np.mean([_low(figs[f]) for f in files])), 4) if files else 0.0)


def _boosted(boosting: Mapping[str, Any]) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    # Fixed rounds, no early stopping: its validation split would make the model depend on a random draw.
    return HistGradientBoostingClassifier(**boosting, class_weight="balanced", early_stopping=False, random_state=0)


def exported(fit: Any) -> Any:
    """A fitted HistGradientBoostingClassifier's trees as the package reads them (`choice.Trees`)."""
    from querywise.understand.followup.choice import Trees

    roots: list[int] = []
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    # scikit-learn's private tree arrays: `train` checks the exported trees reproduce its chances.
    for (predictor,) in fit._predictors:  # one tree per round (binary)
        base = len(feature)
        roots.append(base)
        for i, node in enumerate(predictor.nodes):
            leaf = bool(node["is_leaf"])
            feature.append(0 if leaf else int(node["feature_idx"]))
            threshold.append(0.0 if leaf else float(node["num_threshold"]))
            left.append(base + i if leaf else base + int(node["left"]))
            right.append(base + i if leaf else base + int(node["right"]))
            value.append(float(node["value"]) if leaf else 0.0)
    return Trees(roots=roots, feature=feature, threshold=threshold, left=left, right=right, value=value)


def train(items: Sequence[dict[str, Any]], thresholds: Sequence[float] = THRESHOLDS,
          caps: Sequence[int] = CAPS, boosting: Mapping[str, Any] = BOOSTING) -> tuple[Any, dict[str, Any]]:
    """The model fitted on every word of `items` with the threshold and cap the files left out
    in turn chose, and the figures that chose them."""
    from sklearn.model_selection import LeaveOneGroupOut

    from querywise.understand.followup.choice import PhraseModel, decide

    names = list(next(w["features"] for it in items for w in it.get("words", [])))
    flat = [(i, j) for i, it in enumerate(items) for j, _ in enumerate(it.get("words", []))]
    X = np.array([[items[i]["words"][j]["features"][k] for k in names] for i, j in flat])
    adds = [person_adds(it) for it in items]  # once per row, not once per word
    y = np.array([int(items[i]["words"][j]["term"] in adds[i]) for i, j in flat])
    sources = np.array([items[i]["source"] for i, _ in flat])
    answered = [i for i, it in enumerate(items) if it.get("answered")]
    parts = {"answered": answered, "unanswered": [i for i, it in enumerate(items) if not it.get("answered")],
             "cast2019": [i for i, it in enumerate(items) if it["source"] == "cast2019"]}
    files = sorted({items[i]["source"] for i in answered})
    parts.update({f: [i for i in answered if items[i]["source"] == f] for f in files})
    counted = [f for f in files if len(parts[f]) >= MIN_ROWS]
    texts: dict[tuple[int, tuple[bool, ...]], str] = {}

    def text(i: int, keep: Sequence[bool]) -> str:
        key = (i, tuple(keep))
        if key not in texts:
            texts[key] = compose_row(items[i], keep)
        return texts[key]

    def figures(chance: np.ndarray, threshold: float, cap: int) -> dict[str, dict[str, float]]:
        by_row: dict[int, list[float]] = {}
        for (i, _), p in zip(flat, chance, strict=True):
            by_row.setdefault(i, []).append(float(p))
        searched = [text(i, decide(by_row[i], threshold, cap=cap)) if i in by_row else str(it["old"]) for i, it in enumerate(items)]
        return {name: added([items[i] for i in idx], [searched[i] for i in idx]) for name, idx in parts.items()}

    rules = {name: added([items[i] for i in idx], [items[i]["old"] for i in idx]) for name, idx in parts.items()}
    sweep: list[dict[str, Any]] = []
    chance = np.zeros(len(y))
    for fold_train, fold_test in LeaveOneGroupOut().split(X, y, sources):
        chance[fold_test] = _boosted(boosting).fit(X[fold_train], y[fold_train]).predict_proba(X[fold_test])[:, 1]
    for t in thresholds:
        for cap in caps:
            figs = figures(chance, t, cap)
            count, mean_low = _bar(figs, counted)
            sweep.append({"threshold": t, "cap": cap, "files_at_bar": count, "mean_low": mean_low, **figs})
    log(f"best files at the bar {max(s['files_at_bar'] for s in sweep)} of {len(counted)}")
    # The maintainers' bar is recall and precision both >= 0.50 on each deployment they check: each
    # file left out stands for one.
    chosen = max(sweep, key=lambda s: (s["files_at_bar"], s["mean_low"], s["answered"]["f1"], s["threshold"], -s["cap"]))
    fit = _boosted(boosting).fit(X, y)
    model = PhraseModel(features=names, baseline=float(fit._baseline_prediction.ravel()[0]), trees=exported(fit), threshold=chosen["threshold"],
                        cap=chosen["cap"], provenance={
        "command": COMMAND, "fit": f"sklearn HistGradientBoostingClassifier({', '.join(f'{k}={v}' for k, v in boosting.items())}, "
                                   "class_weight='balanced') on every word the rows offer",
        "train": "dialogues_passages, dialogues_passages_dev, dialogues_read, dialogues_train*.jsonl and CAsT 2019 (see bench/training/phrase_choice.py)",
        "choice": f"threshold and cap meeting recall and precision >= {BAR} on the most files left out in turn (rows with answers), then the mean of the lower one",
        "rows": {name: len(idx) for name, idx in parts.items()}, "words": len(y), "positives": int(y.sum()),
        "digest": hashlib.sha1(json.dumps([it["message"] for it in items]).encode()).hexdigest()[:12],
    })
    if not np.allclose(model.chances([dict(zip(names, row, strict=True)) for row in X[:5000]]), fit.predict_proba(X[:5000])[:, 1], atol=1e-6):
        raise RuntimeError("the exported trees do not reproduce scikit-learn's chances")
    top = sorted(sweep, key=lambda s: (-s["files_at_bar"], -s["mean_low"]))[:15]
    rules_count, rules_low = _bar(rules, counted)
    splits = dict.fromkeys(names, 0)  # how often the trees ask each feature (the page's summary of the model)
    for i, f in enumerate(model.trees.feature):
        if model.trees.left[i] != i:
            splits[names[f]] += 1
    summary = {**model.model_dump(exclude={"trees"}), "trees": len(model.trees.roots), "splits": splits}
    return model, {"model": summary, "rules": rules, "rules_at_bar": [rules_count, rules_low], "chosen": chosen, "counted": counted, "sweep_top": top}


def main(argv: Sequence[str] | None = None) -> None:
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
    else:
        items = collect()
        ROWS.parent.mkdir(parents=True, exist_ok=True)  # bench/work is not in a fresh clone
        ROWS.write_text(json.dumps(items), encoding="utf-8")
    model, result = train(items)
    MODEL.write_text(json.dumps(model.model_dump(), separators=(",", ":")) + "\n", encoding="utf-8")  # 9,000 tree nodes: one line
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
    m, r, c = result["model"], result["rules"], result["chosen"]
    lines = ["# The follow-up's learnt choice: word by word, each file left out in turn", "",
             f"Command: `{result['machine']['command']}` (writes `src/querywise/understand/followup/phrase_choice.json`).", "",
             f"Gradient-boosted trees ({m['provenance']['fit']}) over every word the flagged rows offer (`words.offered_words`); each "
             "training file (a writer) left out in turn, the model fitted on the others. Chosen: the threshold and cap that meet the maintainers' bar "
             f"(added-term recall and precision >= {BAR}) on the most files left out (rows with answers, files with >= {MIN_ROWS} "
             "such rows), then the highest mean of the lower one, then pooled F1: "
             f"threshold {c['threshold']}, at most {c['cap']} words. "
             f"Files at the bar: rules {result['rules_at_bar'][0]} of {len(result['counted'])} (mean lower {result['rules_at_bar'][1]:.3f}), "
             f"learnt choice {c['files_at_bar']} (mean lower {c['mean_low']:.3f}).", "",
             "Added-term recall / precision (F1), pooled; the learnt column is out of file. The rules were written reading "
             "passages, passages_dev and read (in-sample there) and the older train files; train_10, 11 and 12 were never read row by row. "
             "answered / unanswered: rows whose history does / does not hold an assistant's answer (the default runs the choice on the first).", "",
             "| rows | n | rules | learnt choice (file left out) |", "|---|---|---|---|"]
    for name, fig in r.items():
        n = m["provenance"]["rows"].get(name, "")
        lines.append(f"| {name} | {n} | {fig['recall']:.3f} / {fig['precision']:.3f} ({fig['f1']:.3f}) | "
                     f"{c[name]['recall']:.3f} / {c[name]['precision']:.3f} ({c[name]['f1']:.3f}) |")
    lines += ["", "Top of the sweep:", "", "| threshold | cap | files at the bar | mean lower | answered R / P | unanswered R / P |", "|---|---|---|---|---|---|"]
    lines += [f"| {s['threshold']} | {s['cap']} | {s['files_at_bar']} | {s['mean_low']:.3f} | {s['answered']['recall']:.3f} / {s['answered']['precision']:.3f} | "
              f"{s['unanswered']['recall']:.3f} / {s['unanswered']['precision']:.3f} |" for s in result["sweep_top"]]
    lines += ["", f"Default `phrase_choice = \"answers\"`: the choice runs where the row's history holds an assistant's answer "
              f"(out of file, the lower of recall and precision {_low(r['answered']):.3f} -> {_low(c['answered']):.3f} there; "
              f"on rows with user turns only {_low(r['unanswered']):.3f} -> {_low(c['unanswered']):.3f}). "
              "So CAsT 2020 (no answers in its file) keeps the rules' form."]
    if result.get("reported"):
        heads = {"rules": "rules (`\"off\"`)", "learnt": "learnt choice (`\"always\"`)", "default": "default (`\"answers\"`)"}
        shown = [h for h in heads if any(h in row for row in result["reported"].values())]
        lines += ["", "Reported after the choice (`python -m bench.understanding.followup_gate --year 2020 | dialogues | passages_2 | passages_3 | passages_4`), "
                  "added-term recall / precision:", "",
                  "| set | " + " | ".join(heads[h] for h in shown) + " |", "|---|" + "---|" * len(shown)]
        for name, row in result["reported"].items():
            lines.append(f"| {name} | " + " | ".join(f"{row[h]['recall']:.3f} / {row[h]['precision']:.3f}" if h in row else "-" for h in shown) + " |")
    lines += ["", *(f"- {note}" for note in result.get("notes", []))] if result.get("notes") else []
    lines += ["", f"Splits per feature ({m['trees']} trees):", "", "| feature | splits |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(m["splits"].items(), key=lambda kv: -kv[1])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
