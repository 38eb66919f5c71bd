"""The learnt choice's threshold and cap on doc2dial's train documents (#34 item 5).

    .venv/bin/python -m bench.understanding.choice_doc2dial [--top N]

`bench/training/phrase_choice.py` picks the threshold and cap on the writers' files, each left out
in turn (added terms). Retrieval is the other half of the choice: doc2dial's follow-up slice and
its changes of subject after an answer (`followup_recall`), whose target is a loss of at most 0.01.
This runs the packaged model at each of the sweep's `N` best settings (`phrase_choice.json`'s
`sweep_top`) and with the choice off (the rules' form alone), on doc2dial's TRAIN documents only
(splits by document, `datasets.doc2dial_split`): what a refit's choice can read; val and test stay
for `followup_recall`'s report. recall@5 of the gold chunk, the delta against the message as
typed, and its standard error with each document's turns as one cluster.

Writes bench/results/choice_doc2dial.json and .md; reuses followup_recall's index.
"""

from __future__ import annotations

import argparse
import json
from typing import Any
from unittest import mock

from bench import ROOT, log
from bench.datasets import changes_of_subject, doc2dial_split, document_of
from bench.report import publish
from bench.understanding.followup_recall import doc2dial_index, slice_figures

COMMAND = ".venv/bin/python -m bench.understanding.choice_doc2dial"
SLICES = ("follow_up_slice", "changes_of_subject_after_an_answer")


def measure(top: int) -> dict[str, Any]:
    import querywise.understand.followup.move as move
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics
    from querywise.service import QueryWise
    from querywise.understand.followup.choice import phrase_model

    page = json.loads((ROOT / "bench" / "results" / "phrase_choice.json").read_text(encoding="utf-8"))
    packaged = phrase_model()
    settings, ix, cases = doc2dial_index()
    train = [c for c in cases if doc2dial_split(document_of(c)) == "train"]
    sliced = {"follow_up_slice": [c for c in train if "follow_up" in c.slices],
              "changes_of_subject_after_an_answer": [c for c in changes_of_subject(cases, answered=True) if doc2dial_split(document_of(c)) == "train"]}
    metrics = parse_metrics(["recall@5"])
    off = settings.model_copy(update={"understanding": settings.understanding.model_copy(update={"phrase_choice": "off"})})
    rows: list[dict[str, Any]] = []
    with ix:
        with QueryWise(off, ix) as qw:
            raw = {name: run_arm(cs, qw, Arm(name="as_typed", moves=()), metrics) for name, cs in sliced.items()}
            moved = {name: run_arm(cs, qw, Arm(name="follow_up", moves=("follow_up",)), metrics) for name, cs in sliced.items()}
            rows.append({"setting": "off (the rules' form)", **{n: slice_figures(sliced[n], raw[n].cases, moved[n].cases) for n in SLICES}})
        with QueryWise(settings, ix) as qw:
            for s in page["sweep_top"][:top]:
                model = packaged.model_copy(update={"threshold": s["threshold"], "cap": s["cap"]})
                log(f"threshold {s['threshold']}, cap {s['cap']}")
                # The packaged model at another threshold and cap: the move reads it through this name.
                with mock.patch.object(move, "phrase_model", lambda model=model: model):
                    moved = {name: run_arm(cs, qw, Arm(name="follow_up", moves=("follow_up",)), metrics) for name, cs in sliced.items()}
                shipped = s["threshold"] == packaged.threshold and s["cap"] == packaged.cap
                rows.append({"setting": f"threshold {s['threshold']}, cap {s['cap']}{' (packaged)' if shipped else ''}",
                             "files_at_bar": s["files_at_bar"], "mean_low": s["mean_low"], **{n: slice_figures(sliced[n], raw[n].cases, moved[n].cases) for n in SLICES}})
    return {"model_digest": packaged.provenance.get("digest"), "rows": rows}


def markdown(result: dict[str, Any]) -> str:
    lines = ["# The learnt choice's threshold and cap on doc2dial's train documents", "", f"Command: `{result['machine']['command']}`.", "",
             "The packaged model (`phrase_choice.json`) at the best settings of its own sweep (files left out in turn: files at the bar, "
             "mean of each file's lower figure) and the choice off, on doc2dial's train documents: recall@5 with the follow-up move, its "
             "delta against the message as typed (SE: each document's turns one cluster). Targets (#34): follow-up slice >= 0.62, a change "
             "of subject after an answer losing <= 0.01. Val and test: `conversations.md` (the packaged setting only).", "",
             "| setting | files at the bar | mean lower | follow-ups (n) | delta | changes after an answer (n) | delta (SE) |", "|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        f, c = r["follow_up_slice"], r["changes_of_subject_after_an_answer"]
        sweep = f"{r['files_at_bar']} | {r['mean_low']:.3f}" if "mean_low" in r else "|"  # the choice off has no sweep figures
        lines.append(f"| {r['setting']} | {sweep} | {f['follow_up_move']:.4f} ({f['n']}) | {f['delta']:+.4f} | "
                     f"{c['follow_up_move']:.4f} ({c['n']}) | {c['delta']:+.4f} ({c['delta_se']:.4f}) |")
    lines += ["", *(f"- {n}" for n in result.get("notes", []))]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=6, help="how many of the sweep's best settings (default: %(default)s)")
    args = parser.parse_args()
    out = publish("choice_doc2dial", measure(args.top), command=COMMAND, render=markdown)
    log(out.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
