"""The defaults gate: the default deployment against pass-through, per collection and per slice.

    python -m bench.understanding.defaults_gate            # the demo, SciFact (test), Medline, doc2dial
    python -m bench.understanding.defaults_gate --quick    # the demo and Medline

The seed's first rule is that pass-through is the default and a move changes the plan only on its
own evidence; so on every collection the default deployment must not rank below the message as
typed. For each collection its cases are asked through pass-through (no move), through each
default move alone and through all of them (the default), in hybrid mode (`querywise.evaluation`:
the path users run); nDCG@10 per case, and per slice the paired difference with its 95% bootstrap
interval (seed 42); and, as typed, hybrid (plain RRF) against dense and BM25 alone, the untuned
fusion's distance from the best single mode. The gate holds when, on every slice of at least `MIN_SLICE` cases, the default's
lower bound is at least `-TOLERANCE`. Each move's own row says whether it earns its keep on the
slice it exists for (follow-up on follow_up, spelling on typo, ...).

Not in it yet (their own issue): the reference help centre (its acceptance tests), CAsT 2019/2020
(no passage corpus: the follow-up gate's own benchmark, `understanding.followup_gate`), CLINC150
routing (`routing.clinc150`).
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import DATA, WORK, datasets, log
from bench.report import publish

MIN_SLICE = 20  # slices smaller than this are reported, not gated
TOLERANCE = 0.005  # the lower bound of the default's paired difference may not go below -TOLERANCE
METRIC = "ndcg@10"
COMMAND = "python -m bench.understanding.defaults_gate"


def gate(name: str, cases: Sequence[Any], deployment: Any) -> dict[str, Any]:
    """Pass-through, each default move alone and all of them on `cases`; the deltas per slice and
    the gate's verdict (`holds`, and the slices that break it)."""
    from querywise.evaluation.ablation import plan_ablation, run_ablation
    from querywise.evaluation.metrics import parse_metrics

    settings = deployment.settings
    moves = list(settings.understanding.moves)
    plan = plan_ablation(settings, [*moves, "all", "dense", "bm25"], unable=deployment.understander.unable())
    t = time.perf_counter()
    report = run_ablation(cases, deployment, plan, parse_metrics([METRIC]))
    default = "all" if any(a.name == "all" for a in plan.arms) else next((a.name for a in plan.arms if a.name != "baseline"), "baseline")
    rows: list[dict[str, Any]] = [{"arm": "default" if d.arm == default else d.arm, "slice": d.slice, "n": d.diff.n, "pass_through": round(d.diff.a, 4),
             "with": round(d.diff.b, 4), "delta": round(d.diff.delta, 4), "low": round(d.diff.low, 4), "high": round(d.diff.high, 4)}
            for d in report.deltas if d.metric == METRIC]
    broken = [r for r in rows if r["arm"] == "default" and r["n"] >= MIN_SLICE and r["low"] < -TOLERANCE]
    # The untuned fusion (hybrid, plain RRF) against the best single mode, as typed, on all cases.
    single = {r["arm"]: r["with"] for r in rows if r["arm"] in ("dense", "bm25") and r["slice"] == "all"}
    hybrid = next((r["pass_through"] for r in rows if r["slice"] == "all"), None)
    fusion = {"hybrid": hybrid, **single, "over_best_single": round(hybrid - max(single.values()), 4) if single and hybrid is not None else None}
    log(f"{name}: {len(cases)} cases x {len(plan.arms)} arms in {time.perf_counter() - t:.0f} s; "
        + ("holds" if not broken else "broken on " + ", ".join(f"{r['slice']} ({r['delta']:+.4f})" for r in broken)))
    return {"n_cases": len(cases), "moves": moves, "default_arm": default, "skipped": plan.skipped, "rows": rows, "fusion": fusion,
            "broken": [r["slice"] for r in broken], "holds": not broken}


def _demo() -> tuple[Any, list[Any], list[Any]]:
    from querywise.config import load_settings
    from querywise.demo import demo_corpus, demo_file
    from querywise.evaluation.cases import load_cases

    cases = [c if c.session else c.model_copy(update={"session": {"market": "eu"}}) for c in load_cases(demo_file("eval_cases.jsonl"))]
    return load_settings(demo_file("querywise.toml")), demo_corpus(), cases


def _default(load: Callable[[], tuple[list[Any], list[Any]]]) -> Callable[[], tuple[Any, list[Any], list[Any]]]:
    """A public collection with the embedded default settings."""
    from querywise.config import Settings

    return lambda: (Settings(), *load())


def collections(quick: bool) -> dict[str, Callable[[], tuple[Any, list[Any], list[Any]]]]:
    """Each collection the gate reads: its name and a loader of (settings, chunks, cases)."""
    out = {"demo": _demo, "medline": _default(lambda: datasets.beir(DATA / "medline", "test"))}
    if not quick:
        out |= {"scifact": _default(lambda: datasets.scifact("test")), "doc2dial": _default(datasets.doc2dial)}
    return out


def run(quick: bool) -> dict[str, Any]:
    from querywise.index import build_index
    from querywise.service import QueryWise

    results: dict[str, Any] = {}
    for name, load in collections(quick).items():
        settings, chunks, cases = load()
        log(f"{name}: {len(chunks)} chunks, {len(cases)} cases")
        path = WORK / f"gate-{name}"
        shutil.rmtree(path, ignore_errors=True)
        with build_index(chunks, path, settings=settings) as ix, QueryWise(settings, ix) as qw:
            results[name] = gate(name, [c for c in cases if c.relevant], qw)
    return {"metric": METRIC, "min_slice": MIN_SLICE, "tolerance": TOLERANCE, "collections": results,
            "holds": all(r["holds"] for r in results.values())}


def markdown(result: dict[str, Any]) -> str:
    out = ["## The defaults gate (`bench/understanding/defaults_gate.py`)", "",
           f"Command: `{result['machine']['command']}`. {result['metric']}, the default deployment (and each of its moves alone) "
           f"minus pass-through, paired, 95% bootstrap interval. Gated: slices of at least {result['min_slice']} cases, "
           f"lower bound >= -{result['tolerance']}. **The gate {'holds' if result['holds'] else 'is broken'}.**", ""]
    for name, c in result["collections"].items():
        out += [f"### {name} ({c['n_cases']} cases; default moves: {', '.join(c['moves'])})", "",
                "Each move alone: its rows on all cases and on the slices where it changed something.", "",
                "| arm | slice | n | pass-through | with | delta | 95% interval | gated |", "|---|---|---|---|---|---|---|---|"]
        shown = [r for r in c["rows"] if r["arm"] not in ("dense", "bm25") and (r["arm"] == "default" or r["slice"] == "all" or r["delta"] != 0)]
        for r in sorted(shown, key=lambda r: (r["arm"] != "default", r["arm"], r["slice"] != "all", r["slice"])):
            gated = "" if r["arm"] != "default" or r["n"] < result["min_slice"] else ("**broken**" if r["low"] < -result["tolerance"] else "ok")
            out.append(f"| {r['arm']} | {r['slice']} | {r['n']} | {r['pass_through']:.4f} | {r['with']:.4f} | {r['delta']:+.4f} | "
                       f"[{r['low']:+.4f}, {r['high']:+.4f}] | {gated} |")
        f = c.get("fusion") or {}
        if f.get("over_best_single") is not None:
            out += ["", f"Fusion, as typed: hybrid (plain RRF) {f['hybrid']:.4f}, dense {f['dense']:.4f}, BM25 {f['bm25']:.4f}; "
                    f"hybrid minus the best single mode {f['over_best_single']:+.4f} (target: at least -0.01)."]
        if c["skipped"]:
            out.append("")
            out.append("Skipped: " + "; ".join(f"{k} ({v})" for k, v in c["skipped"].items()))
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the demo and Medline only")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    result = run(args.quick)
    name = "defaults_gate-quick" if args.quick else "defaults_gate"
    publish(name, result, command=args.command or COMMAND + (" --quick" if args.quick else ""), render=markdown)
    log(f"wrote bench/results/{name}.json and .md: the gate {'holds' if result['holds'] else 'is broken'}")


if __name__ == "__main__":
    main()
