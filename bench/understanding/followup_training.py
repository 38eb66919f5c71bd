"""Added terms of the follow-up forms on the TRAINING and development conversation files (#34): the
figure every form rule is chosen on, never a report.

    .venv/bin/python -m bench.understanding.followup_training [--mode off|answers|always|subject ...]

Each row of `dialogues_train*.jsonl`, `dialogues_passages_dev.jsonl` and `dialogues_passages.jsonl`
is searched as the plan would (the gate decides; `plan_rewriter` gives the form), and the terms a
person's rewrite adds are compared with the ones the form adds (`evaluate_rewrites`' added-term
recall / precision), pooled over the files and split in two: the rows with a passage answer in
the history (`followup_sets.is_passage_row`) and the others. `--mode off` is the rules alone (the
learnt phrase choice off), the figure rules are chosen on; `answers` is the default, whose choice was
fitted on these same rows (in-sample: its honest figure is the cross-validation of
`bench.training.phrase_choice`); `subject` is the baseline every form must beat, the conversation's
subject after the message (`subject_rewriter`, the gate deciding as for the forms). The held-out files (dialogues_passages_2/3/4, dialogues_heldout)
and the CAsT years are not read here: `followup_gate` scores them.

Writes bench/results/followup_training.{json,md}.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.report import publish
from bench.understanding.followup_sets import is_passage_row, rounded
from querywise.evaluation.rewrites import SOURCES, RewriteReport, evaluate_rewrites, load_rewrite_rows, plan_rewriter, subject_rewriter

COMMAND = ".venv/bin/python -m bench.understanding.followup_training"
HERE = Path(__file__).parent
#: The files rules are chosen on: the blind training files and the two development sets.
FILES = (*sorted(HERE.glob("dialogues_train*.jsonl")), HERE / "dialogues_passages_dev.jsonl", HERE / "dialogues_passages.jsonl")
PARTS = {"answers": "rows with a passage answer in the history", "users": "the other rows"}
#: The modes scored unless told: the rules alone, the default, and the "subject + message" baseline.
MODES = ("off", "answers", "subject")


def figures(mode: str, files: tuple[Path, ...] = FILES) -> dict[str, Any]:
    """Per file and pooled: added-term recall / precision of each part, and its term counts (`mode`:
    a phrase_choice setting, or "subject" for the baseline)."""
    from querywise.config import Settings
    from querywise.service import QueryWise

    settings = Settings()
    if mode != "subject":
        settings = settings.model_copy(update={"understanding": settings.understanding.model_copy(update={"phrase_choice": mode})})
    counts: dict[str, dict[str, dict[str, int]]] = {}
    with QueryWise(settings) as qw:
        rewriter = subject_rewriter() if mode == "subject" else plan_rewriter(qw)
        for path in files:
            rows = load_rewrite_rows(path)
            split = {"answers": [r for r in rows if is_passage_row(r)], "users": [r for r in rows if not is_passage_row(r)]}
            counts[path.stem] = {part: _counts(evaluate_rewrites(rs, rewriter=rewriter)) for part, rs in split.items()}
    pooled = {part: {k: sum(c[part][k] for c in counts.values()) for k in next(iter(counts.values()))[part]} for part in PARTS}
    return {"mode": mode, "files": {f: _scored(c) for f, c in counts.items()}, "pooled": _scored(pooled)}


def _counts(rep: RewriteReport) -> dict[str, int]:
    """Term counts, in all and by where the history said each term (`by_<source>_<count>`)."""
    both, person, form = rep.added_terms or (0, 0, 0)
    by = {f"by_{s}_{k}": getattr(c, k) for s, c in (rep.added_by_source or {}).items() for k in ("both", "person", "form")}
    return {"both": both, "person": person, "form": form, "rows": rep.n, **by}


def _scored(c: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    return {part: {**v, "recall": rounded(v["both"] / v["person"]) if v["person"] else None,
                   "precision": rounded(v["both"] / v["form"]) if v["form"] else None} for part, v in c.items()}


def markdown(r: dict[str, Any]) -> str:
    lines = ["# Follow-up forms on the training and development files (#34)", "",
             f"Command: `{r.get('scored', COMMAND)}`. The files rules are chosen on (never a report: the held-out pages are "
             "`rewrite_passages_2/3/4.md` and `rewrite_dialogues.md`'s held-out part). Added-term recall / precision, "
             "pooled; 'answers': rows with a passage answer in the history, 'users': the other rows.", "",
             *(f"- {line}" for line in r.get("notes", [])), *([""] if r.get("notes") else [])]
    for res in r["modes"]:
        title = "the 'subject + message' baseline (the gate deciding)" if res["mode"] == "subject" else f"phrase_choice = {res['mode']!r}"
        lines += [f"## {title}", "", "| file | answers: rows | recall | precision | users: rows | recall | precision |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for name, v in [*res["files"].items(), ("**pooled**", res["pooled"])]:
            a, u = v["answers"], v["users"]
            lines.append(f"| {name} | {a['rows']} | {a['recall']} | {a['precision']} | {u['rows']} | {u['recall']} | {u['precision']} |")
        lines += ["", "Pooled, by where the history said each term (`rewrite-eval`'s split): the terms people add, the share the "
                  "searched text holds, the terms it adds and the share of those people add.", "",
                  "| part | said in | people add | held | the form adds | right |", "|---|---|---:|---:|---:|---:|"]
        for part in PARTS:
            v = res["pooled"][part]
            for source in SOURCES:
                both, person, form = (v.get(f"by_{source}_{k}", 0) for k in ("both", "person", "form"))
                lines.append(f"| {part} | {source.replace('_', ' ')} | {person} | {rounded(both / person) if person else '-'} | {form} | "
                             f"{rounded(both / form) if form else '-'} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append", choices=("off", "answers", "always", "subject"),
                        help="phrase_choice modes to score, or 'subject' for the baseline (default: off, answers and subject)")
    parser.add_argument("--files", nargs="+", metavar="STEM", help="score only these files of bench/understanding (e.g. dialogues_train_8): "
                        "a new file's first read, before any rule is chosen on it")
    parser.add_argument("--page", default="followup_training", help="results page to write (default: %(default)s)")
    parser.add_argument("--note", action="append", default=[], help="a line for the page (what the files are, what was read when)")
    args = parser.parse_args()
    files = tuple(HERE / f"{stem}.jsonl" for stem in args.files) if args.files else FILES
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    command = COMMAND + (f" --files {' '.join(args.files)} --page {args.page}" if args.files else "")
    result = {"modes": [figures(m, files) for m in args.mode or MODES], "notes": args.note, "scored": command}
    path = publish(args.page, result, command=command, render=markdown)
    print(path.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
