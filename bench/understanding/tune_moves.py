"""`tune --moves` chosen on one set, reported on another.

    python -m bench.understanding.tune_moves           # SciFact, doc2dial, CAsT 2019 -> 2020 and back, the demo
    python -m bench.understanding.tune_moves --quick   # the demo and CAsT

For each pair the per-slice choice is made by `querywise.evaluation.tune_moves.tune_moves` on the
first set (its cross-validated gain is what tuning promised), written as `[understanding.off_in]`,
and the second set is asked through the deployment with and without it: nDCG@10, the tuned config
minus every move everywhere, paired, 95% bootstrap interval (seed 42). Pairs: SciFact train ->
test; doc2dial's documents split by hash (train -> test); CAsT 2019 -> 2020 and 2020 -> 2019 (the
human rewrites as the corpus, as in the defaults gate: each turn must find its own rewrite); the
demo cross-validated only (one deployment, 59 cases).
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Callable, Sequence
from typing import Any

from bench import WORK, datasets, log
from bench.report import publish

METRIC = "ndcg@10"
COMMAND = "python -m bench.understanding.tune_moves"
Loader = Callable[[], tuple[Any, list[Any], list[Any], list[Any]]]  # settings, chunks, choose-on cases, report-on cases


def _scifact() -> tuple[Any, list[Any], list[Any], list[Any]]:
    from querywise.config import Settings

    chunks, test = datasets.scifact("test")
    _, train = datasets.scifact("train")
    return Settings(), chunks, train, test


def _doc2dial() -> tuple[Any, list[Any], list[Any], list[Any]]:
    from querywise.config import Settings

    chunks, cases = datasets.doc2dial()
    split = [datasets.doc2dial_split(datasets.document_of(c)) for c in cases]
    return Settings(), chunks, [c for c, s in zip(cases, split, strict=True) if s == "train"], [c for c, s in zip(cases, split, strict=True) if s == "test"]


def _cast_pair(choose: str, report: str) -> Loader:
    def load() -> tuple[Any, list[Any], list[Any], list[Any]]:
        settings, chunks_a, cases_a = datasets.cast_rewrites(choose)()
        _, chunks_b, cases_b = datasets.cast_rewrites(report)()
        return settings, [*chunks_a, *chunks_b], cases_a, cases_b  # one index of both years' rewrites (ids differ by topic number)

    return load


def _demo_only() -> tuple[Any, list[Any], list[Any], list[Any]]:
    settings, chunks, cases = datasets.demo_deployment()
    return settings, chunks, cases, []


def measure(name: str, load: Loader) -> dict[str, Any]:
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metric
    from querywise.evaluation.stats import paired_difference
    from querywise.evaluation.tune_moves import tune_moves
    from querywise.index import build_index
    from querywise.service import QueryWise

    settings, chunks, choose, report = load()
    metric = parse_metric(METRIC)
    path = WORK / f"tune-moves-{name}"
    shutil.rmtree(path, ignore_errors=True)
    with build_index(chunks, path, settings=settings) as ix, QueryWise(settings, ix) as qw:
        tuned = tune_moves([c for c in choose if c.relevant], qw, metric)
        out: dict[str, Any] = {"n_choose": tuned.n, "chosen": tuned.chosen, "best": tuned.best, "cv_gain": tuned.cv_gain,
                               "cv_low": tuned.cv_gain_low, "cv_high": tuned.cv_gain_high, "warnings": tuned.warnings,
                               "gains": [g.model_dump() for g in tuned.gains if g.gain != 0 or g.off]}
        judged = [c for c in report if c.relevant]
        if judged:
            moves = tuple(settings.understanding.moves)
            with qw.with_moves(moves, off_in={}) as everywhere, qw.with_moves(moves, off_in=tuned.chosen) as sliced:
                a = run_arm(judged, everywhere, Arm(name="default", moves=moves), [metric])
                b = run_arm(judged, sliced, Arm(name="tuned", moves=moves), [metric])
            d = paired_difference([r.scores[METRIC] or 0.0 for r in a.cases], [r.scores[METRIC] or 0.0 for r in b.cases])
            out |= {"n_report": d.n, "default": round(d.a, 4), "tuned": round(d.b, 4), "delta": round(d.delta, 4),
                    "low": round(d.low, 4), "high": round(d.high, 4)}
    log(f"{name}: chose {tuned.chosen or 'nothing'} on {tuned.n} cases (cv gain {tuned.cv_gain:+.4f}); "
        + (f"reported {out['delta']:+.4f} [{out['low']:+.4f}, {out['high']:+.4f}] on {out['n_report']}" if "delta" in out else "no report set"))
    return out


def pairs(quick: bool) -> dict[str, Loader]:
    out: dict[str, Loader] = {"demo (cross-validated)": _demo_only, "cast 2019 -> 2020": _cast_pair("2019", "2020"),
                              "cast 2020 -> 2019": _cast_pair("2020", "2019")}
    if not quick:
        out |= {"scifact train -> test": _scifact, "doc2dial train -> test documents": _doc2dial}
    return out


def markdown(result: dict[str, Any]) -> str:
    out = ["## `tune --moves`: chosen on one set, reported on another (`bench/understanding/tune_moves.py`)", "",
           f"Command: `{result['machine']['command']}`. {result['metric']}. Chosen: `[understanding.off_in]` as `tune --moves` "
           "writes it (what it switched off, or nothing); cv: its cross-validated held-out gain on the choosing set; reported: the "
           "tuned config minus every move everywhere on the other set, paired, 95% interval.", "",
           "| pair | cases (choose / report) | chosen | cv gain [95%] | default | tuned | delta [95%] |", "|---|---|---|---|---|---|---|"]
    for name, r in result["pairs"].items():
        chosen = "; ".join(f"{m} off on {', '.join(s)}" for m, s in r["chosen"].items()) or "nothing"
        if r["best"] and not r["chosen"]:
            chosen += " (" + "; ".join(f"{m} on {', '.join(s)}" for m, s in r["best"].items()) + " not kept)"
        rep = (f"{r['default']:.4f} | {r['tuned']:.4f} | {r['delta']:+.4f} [{r['low']:+.4f}, {r['high']:+.4f}]" if "delta" in r else "– | – | –")
        out.append(f"| {name} | {r['n_choose']} / {r.get('n_report', 0)} | {chosen} | {r['cv_gain']:+.4f} [{r['cv_low']:+.4f}, {r['cv_high']:+.4f}] | {rep} |")
    out += ["", "Moves with a non-zero gain on a slice of the choosing set:", ""]
    for name, r in result["pairs"].items():
        rows = ", ".join(f"{g['move']} on {g['slice']} {g['gain']:+.4f} (n {g['n']})" for g in r["gains"]) or "none"
        out.append(f"- {name}: {rows}")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the demo and CAsT only")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    result = {"metric": METRIC, "pairs": {name: measure(name, load) for name, load in pairs(args.quick).items()}}
    name = "tune_moves-quick" if args.quick else "tune_moves"
    publish(name, result, command=args.command or COMMAND + (" --quick" if args.quick else ""), render=markdown)
    log(f"wrote bench/results/{name}.json and .md")


if __name__ == "__main__":
    main()
