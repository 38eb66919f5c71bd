"""Conversations (#14): follow-ups on doc2dial, changes of subject, and the demo conversation.

    .venv/bin/python -m bench.understanding.followup_recall

1. doc2dial (its 273 documents cut by the default chunker; 3,972 user turns with their user AND
   agent turns as history): recall@5 of the gold chunk with the message as typed (no moves) and
   with the follow-up move, on the follow-up slice (the gate flags the turn) and the standalone
   slice (turns after the first that it does not flag), per split. Splits are by document, 60 /
   20 / 20 by a hash of the document id: the referent tracker's answer excerpt and the weak form's
   RRF weight were chosen on train; the topic-shift check was fitted on train and its threshold
   and hedge chosen on train+val (bench/training/topic_shift.py).
2. Changes of subject: each dialogue's first turn placed after the first turn of a dialogue about
   another document, so that every flag is false; recall@5 as typed and with the move (a loss is
   what the move costs when the subject changes). Also after that turn AND the agent's answer to
   it (`changes_of_subject_after_an_answer`): what searching the answer's words beside a form
   costs when the user changes subject after an answer.
3. The demo conversation: each turn's expected chunk and its rank, and what was searched.

Writes bench/results/conversations.json and conversations.md; reuses the doc2dial index of
`bench.retrieval.evaluation` (bench/work/eval-doc2dial) when it is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import WORK, datasets, log
from bench.datasets import SPLITS, changes_of_subject, doc2dial_split, document_of
from bench.measures import cluster_se
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.understanding.followup_recall"


def _recalls(cases: Sequence[Any], qw: Any) -> dict[str, Any]:
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics

    metrics = parse_metrics(["recall@5"])
    raw = run_arm(cases, qw, Arm(name="as_typed", moves=()), metrics)
    move = run_arm(cases, qw, Arm(name="follow_up", moves=("follow_up",)), metrics)
    out: dict[str, Any] = {}
    for part in (*SPLITS, "all"):
        idx = [i for i, c in enumerate(cases) if part == "all" or doc2dial_split(document_of(c)) == part]
        if idx:
            out[part] = slice_figures([cases[i] for i in idx], [raw.cases[i] for i in idx], [move.cases[i] for i in idx])
    return out


def slice_figures(cases: Sequence[Any], typed: Sequence[Any], moved: Sequence[Any]) -> dict[str, Any]:
    """recall@5 of `cases` as typed and with the move (their runs, in order), the delta, and its
    standard error with each document's turns as one cluster."""
    a = [t.scores["recall@5"] or 0.0 for t in typed]
    b = [m.scores["recall@5"] or 0.0 for m in moved]
    deltas = [(document_of(c), y - x) for c, x, y in zip(cases, a, b, strict=True)]
    return {"n": len(cases), "documents": len({d for d, _ in deltas}), "as_typed": round(sum(a) / len(cases), 4),
            "follow_up_move": round(sum(b) / len(cases), 4), "delta": round((sum(b) - sum(a)) / len(cases), 4),
            "delta_se": round(cluster_se(deltas), 4)}


def doc2dial(qw: Any, cases: Sequence[Any]) -> dict[str, Any]:
    follow = [c for c in cases if "follow_up" in c.slices]
    alone = [c for c in cases if c.history and "standalone" in c.slices]
    moved = changes_of_subject(cases)
    log(f"doc2dial: {len(follow)} follow-up turns, {len(alone)} standalone turns after the first, {len(moved)} changes of subject")
    answered = changes_of_subject(cases, answered=True)
    return {"follow_up_slice": _recalls(follow, qw), "standalone_slice": _recalls(alone, qw), "changes_of_subject": _recalls(moved, qw),
            "changes_of_subject_after_an_answer": _recalls(answered, qw)}


def demo() -> list[dict[str, Any]]:
    import tempfile

    from querywise import QueryWise, build_index, load_settings
    from querywise.demo import demo_conversation, demo_corpus, demo_file

    settings = load_settings(demo_file("querywise.toml"))
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, build_index(demo_corpus(), Path(tmp) / "ix", settings=settings) as ix, QueryWise(settings, ix) as qw:
        history: list[str] = []
        for turn in demo_conversation():
            result = qw.ask(turn["message"], history=history, session={"market": "eu"}, k=10)
            ranks = {h.id: h.rank for h in result.hits}
            rows.append({"turn": turn["turn"], "searched": [[q.kind, q.text] for q in result.plan.queries],
                         "expected": {e: ranks.get(e) for e in turn["expected"]}})
            history.append(turn["message"])
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Conversations: follow-ups, changes of subject, the demo", "", f"Command: `{result['machine']['command']}`.", "",
             "doc2dial, recall@5 of the gold chunk; history = the user's and the agent's earlier turns; splits by document "
             "(60/20/20; answer excerpt, weak form's RRF weight and the answer query's weight (`ANSWER_WEIGHT`, `ANSWER_MAX_CHANCE`) and its drift guard with the unanswered-question rule (`DRIFT_CLARITY`, `DRIFT_AWAY`, `asks_unanswered`: bench/results/subject_probe.md, section 4) chosen on train, the topic-shift check fitted on train with its threshold and hedge chosen on train+val: bench/training/topic_shift.py). Targets (#34): follow-up slice >= 0.62, "
             "standalone slice not lower than as typed, changes of subject losing <= 0.01. "
             "SE: the delta's standard error with each document's turns as one cluster.", "",
             "| slice | split | n (documents) | as typed | follow-up move | delta | SE |", "|---|---|---|---|---|---|---|"]
    for name, parts in result["doc2dial"].items():
        for part, r in parts.items():
            lines.append(f"| {name} | {part} | {r['n']} ({r['documents']}) | {r['as_typed']:.3f} | {r['follow_up_move']:.3f} | "
                         f"{r['delta']:+.3f} | {r['delta_se']:.3f} |")
    lines += ["", "The demo conversation (`make run`): expected chunk -> rank (top 10), and what was searched.", "",
              "| turn | expected (rank) | searched |", "|---|---|---|"]
    for row in result["demo"]:
        exp = ", ".join(f"{k} ({v})" for k, v in row["expected"].items()) or "(no search)"
        searched = "; ".join(f"{k}: {t!r}" for k, t in row["searched"]) or "(nothing)"
        lines.append(f"| {row['turn']} | {exp} | {searched} |")
    return "\n".join(lines) + "\n"


def doc2dial_index() -> tuple[Any, Any, list[Any]]:
    """The default settings, doc2dial's index (bench/work/eval-doc2dial, built when missing) and
    its cases: what this benchmark and the probes beside it search."""
    from querywise.chunking import Chunker
    from querywise.config import Settings
    from querywise.index import Index, build_index

    settings = Settings()
    chunks, cases = datasets.doc2dial(Chunker())
    path = WORK / "eval-doc2dial"
    ix = Index.open(path, settings=settings) if path.exists() else build_index(chunks, path, settings=settings)
    return settings, ix, cases


def main() -> None:
    from querywise.service import QueryWise

    settings, ix, cases = doc2dial_index()
    with ix, QueryWise(settings, ix) as qw:
        result = {"doc2dial": doc2dial(qw, cases), "demo": demo()}
    path = publish("conversations", result, command=COMMAND, render=markdown)
    log(path.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
