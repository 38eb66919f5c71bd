"""Does an execution-time signal tell a change of subject after an answer from a follow-up (#34 item 5)?

    .venv/bin/python -m bench.understanding.answer_signal

The follow-up move searches "form + the answer's words" beside the form (`ANSWER_WEIGHT`); after
an answer, a new subject loses recall@5 to it and to forms that carry the old subject. Plan-time
signals did not separate the two; this probe tries what only a search can tell: how the message as
typed retrieves on its own -- its top dense cosine, and the agreement (overlap of the top 10) of
its own hybrid hits with the answer query's hits. Per doc2dial split (by document), over the
follow-up slice and `changes_of_subject(answered=True)`:

1. the answer query's worth (recall@5 with it minus without it, summed in turns) per bin of each
   signal: a usable signal has bins where the follow-ups gain little and the changes of subject lose;
2. a rule at the root of the plan: when the move ran and the message's own top cosine is at least
   t, search the message as typed; t swept on train, each t's effect reported on train and test.

No plan is changed: the plans are made and run as the benchmark does, and the alternatives are
fused here from each query's own hits (weighted RRF, the execute step's k of 60). Writes
bench/results/answer_signal.json and .md; reuses bench/work/eval-doc2dial.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from bench import WORK, datasets, log
from bench.datasets import changes_of_subject, doc2dial_split, document_of
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.understanding.answer_signal"
SPLITS = ("train", "test")
DEPTH = 50
THRESHOLDS = (0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
COSINE_BINS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 1.01)
OVERLAP_BINS = (0.0, 0.1, 0.3, 0.5, 0.8, 1.01)


def _recall5(ids: Sequence[str], relevant: dict[str, int]) -> float:
    gold = {d for d, g in relevant.items() if g > 0}
    return len(gold & set(ids[:5])) / len(gold)


def _fused(lists: Sequence[Sequence[str]], weights: Sequence[float]) -> list[str]:
    from querywise.index import rrf

    if len(lists) == 1:  # one query keeps its own order, as execute does
        return list(lists[0][:10])
    return [cid for cid, _ in rrf([list(x) for x in lists], k=60, weights=list(weights))][:10]


def _answer_query(texts: Sequence[str], kinds: Sequence[str]) -> int | None:
    """The index of "form + the answer's words": a standalone query that extends an earlier one."""
    for i, (text, kind) in enumerate(zip(texts, kinds, strict=True)):
        if i and kind == "standalone" and any(text != o and text.startswith(o.rstrip() + " ") for o in texts[:i]):
            return i
    return None


def collect(qw: Any, cases: Sequence[Any], group: str) -> list[dict[str, Any]]:
    """Each case's plan, each query's hits, and the message's own hybrid hits and dense cosines."""
    from querywise.retrieve import IndexRetriever, checked

    retriever = IndexRetriever(qw.index)
    rows = []
    for case in cases:
        plan = qw.plan(case.message, history=case.history, session=case.session)
        result = qw.execute(plan, k=10, depth=DEPTH)
        where = plan.access or None
        own = checked(retriever, case.message, k=DEPTH, where=where, mode="hybrid").hits
        dense = checked(retriever, case.message, k=2, where=where, mode="dense").hits
        step = plan.step("follow_up")
        rows.append({"group": group, "split": doc2dial_split(document_of(case)), "relevant": dict(case.relevant),
                     "ran": step is not None and step.status == "ran",
                     "texts": [q.text for q in plan.queries], "kinds": [q.kind for q in plan.queries],
                     "weights": [q.weight for q in plan.queries], "lists": [r.ids for r in result.per_query],
                     "own": [h.id for h in own], "cosine": dense[0].score if dense else 0.0})
    return rows


def _worth(row: dict[str, Any]) -> tuple[int, float] | None:
    """(answer query's index, its worth in recall@5) or None when the plan has none."""
    a = _answer_query(row["texts"], row["kinds"])
    if a is None:
        return None
    keep = [i for i in range(len(row["lists"])) if i != a]
    with_it = _recall5(_fused(row["lists"], row["weights"]), row["relevant"])
    without = _recall5(_fused([row["lists"][i] for i in keep], [row["weights"][i] for i in keep]), row["relevant"])
    return a, with_it - without


def binned(rows: Sequence[dict[str, Any]], split: str) -> dict[str, list[dict[str, Any]]]:
    """The answer query's worth summed (in turns) per bin of each signal, per group."""
    points = []
    for row in rows:
        w = _worth(row) if row["split"] == split else None
        if w is None:
            continue
        a, worth = w
        overlap = len(set(row["own"][:10]) & set(row["lists"][a][:10])) / 10
        points.append((row["group"], row["cosine"], overlap, worth))
    out: dict[str, list[dict[str, Any]]] = {}
    for name, col, edges in (("top_cosine", 1, COSINE_BINS), ("overlap10", 2, OVERLAP_BINS)):
        out[name] = []
        for lo, hi in pairwise(edges):
            sel = [p for p in points if lo <= p[col] < hi]
            out[name].append({"from": lo, "to": min(hi, 1.0), **{g: {"n": sum(p[0] == g for p in sel), "turns": round(sum(p[3] for p in sel if p[0] == g), 2)}
                                                              for g in ("follow_up", "after_an_answer")}})
    return out


def swept(rows: Sequence[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """recall@5 per group with the plan as made, as typed, and with the rule at each threshold."""
    out = []
    for t in (None, *THRESHOLDS):
        entry: dict[str, Any] = {"threshold": t}
        for g in ("follow_up", "after_an_answer"):
            mine = [r for r in rows if r["split"] == split and r["group"] == g]
            scores = [_recall5(r["own"] if t is not None and r["ran"] and r["cosine"] >= t else _fused(r["lists"], r["weights"]), r["relevant"])
                      for r in mine]
            entry[g] = {"n": len(mine), "recall5": round(sum(scores) / len(mine), 4),
                        "as_typed": round(sum(_recall5(r["own"], r["relevant"]) for r in mine) / len(mine), 4),
                        "fired": sum(t is not None and r["ran"] and r["cosine"] >= t for r in mine)}
        out.append(entry)
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = ["# An execution-time signal for a change of subject after an answer (#34 item 5)", "", f"Command: `{result['machine']['command']}`.", "",
             "doc2dial, splits by document; groups: the follow-up slice and `changes_of_subject(answered=True)`. "
             "Signals of the message as typed, from its own search: its top dense cosine, and the overlap of its top 10 "
             "hybrid hits with the answer query's (\"form + the answer's words\"). Nothing in the plan is changed: "
             "alternatives are fused from each query's own hits.", "",
             "## 1. The answer query's worth (recall@5 with it minus without it, summed over turns) per bin", ""]
    for split in SPLITS:
        for name, bins in result["binned"][split].items():
            lines += [f"{split}, by {name}:", "", "| bin | follow-up n | turns | after an answer n | turns |", "|---|---|---|---|---|"]
            lines += [f"| [{b['from']:.2f}, {b['to']:.2f}) | {b['follow_up']['n']} | {b['follow_up']['turns']:+.1f} | "
                      f"{b['after_an_answer']['n']} | {b['after_an_answer']['turns']:+.1f} |" for b in bins]
            lines.append("")
    lines += ["## 2. The rule: when the move ran and the message's own top cosine >= t, search it as typed", "",
              "| t | split | follow-up recall@5 (fired) | after an answer recall@5 (fired) |", "|---|---|---|---|"]
    for split in SPLITS:
        for e in result["swept"][split]:
            t = "plan as made" if e["threshold"] is None else f"{e['threshold']:.2f}"
            f, a = e["follow_up"], e["after_an_answer"]
            lines.append(f"| {t} | {split} | {f['recall5']:.3f} ({f['fired']}) | {a['recall5']:.3f} ({a['fired']}) |")
    f, a = result["swept"]["train"][0]["follow_up"], result["swept"]["train"][0]["after_an_answer"]
    lines += ["", f"As typed (train): follow-up {f['as_typed']:.3f}, after an answer {a['as_typed']:.3f}.", ""]
    return "\n".join(lines) + "\n"


def main() -> None:
    from querywise.chunking import Chunker
    from querywise.config import Settings
    from querywise.index import Index
    from querywise.service import QueryWise

    settings = Settings()
    _, cases = datasets.doc2dial(Chunker())
    path = WORK / "eval-doc2dial"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run python -m bench.understanding.followup_recall first (it builds the index)")
    # Changes of subject are paired over all documents, as the benchmark pairs them, then kept per split.
    ours = [c for c in changes_of_subject(cases, answered=True) if doc2dial_split(document_of(c)) in SPLITS]
    follow = [c for c in cases if "follow_up" in c.slices and doc2dial_split(document_of(c)) in SPLITS]
    with Index.open(path, settings=settings) as ix, QueryWise(settings, ix) as base, base.with_moves(("follow_up",)) as qw:
        rows = collect(qw, follow, "follow_up") + collect(qw, ours, "after_an_answer")
    result = {"binned": {s: binned(rows, s) for s in SPLITS}, "swept": {s: swept(rows, s) for s in SPLITS}}
    path = publish("answer_signal", result, command=COMMAND, render=markdown)
    log(path.with_suffix(".md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
