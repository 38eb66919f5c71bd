"""Weak follow-ups (topic continuity only) on doc2dial: search the standalone form next to the
message (what the product does) or instead of it (the counterfactual), on real continuations and
on changes of subject.

    .venv/bin/python -m bench.weak_followups

1. Real conversations: every doc2dial turn whose follow-up verdict is weak; recall@5 of the gold
   chunk with the message as typed, with "previous turn + message" next to it, and instead of it.
2. Changes of subject: each dialogue's first turn placed after the first turn of a dialogue about
   another document, so that every flag is false; the same three ways on the weakly flagged ones,
   and the cost of replacing the message on the strongly flagged ones.

"Instead" is obtained by reading every weak verdict as strong inside the pipeline (a patch in
this script only). Reuses the doc2dial index of `bench.evaluation` (bench/work/eval-doc2dial).
Writes bench/results/weak_followups.json.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from bench import DATA, WORK, log, write_json

COMMAND = ".venv/bin/python -m bench.weak_followups"


def _three_ways(cases: Sequence[Any], ix: Any, settings: Any) -> dict[str, Any]:
    import querywise.understand.pipeline as pipeline
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics
    from querywise.evaluation.stats import paired_difference
    from querywise.understand.followup import check_follow_up

    metrics = parse_metrics(["recall@5"])
    runs = {
        "as_typed": run_arm(cases, ix, settings, Arm(name="as_typed", moves=()), metrics),
        "next_to": run_arm(cases, ix, settings, Arm(name="next_to", moves=("follow_up",)), metrics),
    }
    as_strong: Callable[..., Any] = lambda *a, **k: dataclasses.replace(v, strength="strong") if (v := check_follow_up(*a, **k)).strength == "weak" else v  # noqa: E731
    pipeline.check_follow_up = as_strong  # type: ignore[assignment]
    try:
        runs["instead"] = run_arm(cases, ix, settings, Arm(name="instead", moves=("follow_up",)), metrics)
    finally:
        pipeline.check_follow_up = check_follow_up  # type: ignore[assignment]
    scores = {k: [c.scores["recall@5"] or 0.0 for c in r.cases] for k, r in runs.items()}
    out: dict[str, Any] = {"n": len(cases), "recall@5": {k: round(sum(v) / len(v), 4) for k, v in scores.items()}}
    for way in ("next_to", "instead"):
        d = paired_difference(scores["as_typed"], scores[way])
        out[f"{way}_minus_as_typed"] = {"delta": round(d.delta, 4), "low": round(d.low, 4), "high": round(d.high, 4), "p_value": round(d.p_value, 4)}
    return out


def main() -> None:
    from querywise.chunking import Chunker
    from querywise.config import Settings
    from querywise.evaluation.cases import load_doc2dial
    from querywise.index import Index, build_index
    from querywise.understand.followup import check_follow_up

    settings = Settings()
    chunks, cases = load_doc2dial(DATA / "doc2dial", Chunker())
    path = WORK / "eval-doc2dial"
    ix = Index.open(path, settings=settings) if path.exists() else build_index(chunks, path, settings=settings)

    weak = [c for c in cases if c.history and check_follow_up(c.message, c.history).strength == "weak"]
    log(f"real conversations: {len(weak)} weakly flagged turns of {len(cases)}")
    real = _three_ways(weak, ix, settings)

    firsts = [c for c in cases if not c.history]
    doc = lambda c: next(iter(c.relevant)).split("#")[0]  # noqa: E731
    moved = []
    for i, c in enumerate(firsts):
        other = next(o for o in firsts[i + 1 :] + firsts[:i] if doc(o) != doc(c))
        moved.append(c.model_copy(update={"history": [other.message]}))
    verdicts = [check_follow_up(c.message, c.history).strength for c in moved]
    flagged = [c for c, v in zip(moved, verdicts, strict=True) if v == "weak"]
    log(f"changes of subject: {len(moved)}; {verdicts.count('weak')} weak, {verdicts.count('strong')} strong flags")
    change = _three_ways(flagged, ix, settings)
    change["of"] = len(moved)
    strong = [c for c, v in zip(moved, verdicts, strict=True) if v == "strong"]
    # A strong verdict replaces the message whatever this script patches: "next_to" and
    # "instead" both measure the replacement there.
    wrong_strong = _three_ways(strong, ix, settings)
    ix.close()
    result = {
        "weak_turns_in_conversations": real,
        "weak_flags_on_changes_of_subject": change,
        "strong_flags_on_changes_of_subject": {"n": wrong_strong["n"], "of": len(moved), "recall@5": wrong_strong["recall@5"],
                                               "replaced_minus_as_typed": wrong_strong["instead_minus_as_typed"]},
    }  # fmt: skip
    path = write_json("weak_followups.json", result, command=COMMAND)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
