"""The defaults gate: the default deployment against pass-through, per collection and per slice.

    python -m bench.understanding.defaults_gate            # every collection below
    python -m bench.understanding.defaults_gate --quick    # the demo, the help centre and Medline

The seed's first rule is that pass-through is the default and a move changes the plan only on its
own evidence; so on every collection the default deployment must not rank below the message as
typed. For each collection its cases are asked through pass-through (no move), through each
default move alone and through all of them (the default), in hybrid mode (`querywise.evaluation`:
the path users run); nDCG@10 per case, and per slice the paired difference with its 95% bootstrap
interval (seed 42); and, as typed, hybrid (plain RRF) against dense and BM25 alone, the untuned
fusion's distance from the best single mode. The gate holds when, on every slice of at least
`MIN_SLICE` cases, the default's lower bound is at least `-TOLERANCE`. Each move's own row says
whether it earns its keep on the slice it exists for (`OWN_SLICE`: follow-up on follow_up,
spelling on typo, ...).

Collections: the demo shop (its own config); the reference help centre as a deployment (its
chunks, catalog and route examples; cases: the eight follow-ups, their hand-written standalone
rewrites, the typo rows); SciFact and Medline (BEIR test splits) and doc2dial's help centre with
the embedded defaults; CAsT 2019 and 2020, which have no passage corpus here: the corpus is the
turns' human rewrites, and each turn (raw utterance after the topic's earlier ones) must find its
own rewrite. Routing has its own row: CLINC150 through `router-eval`'s path with the default
`[routing]` operating point (classifier "auto", thresholds on val, reported on test), against the
same classifier without its gates (every message routed): the gates may not lower the accuracy of
what is answered, and keep OOS recall at or above `[routing] min_oos_recall`.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from bench import DATA, WORK, datasets, log
from bench.report import publish

MIN_SLICE = 20  # slices smaller than this are reported, not gated
# The slice each move exists for: its gain there is shown on its own (a move should earn its keep there).
OWN_SLICE = {"follow_up": "follow_up", "several_intents": "several_intents", "filters": "filters", "spelling": "typo",
             "exact_lookup": "identifier", "ambiguity": "ambiguous"}
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


def _default(load: Callable[[], tuple[list[Any], list[Any]]]) -> Callable[[], tuple[Any, list[Any], list[Any]]]:
    """A public collection with the embedded default settings."""
    from querywise.config import Settings

    return lambda: (Settings(), *load())


def collections(quick: bool) -> dict[str, Callable[[], tuple[Any, list[Any], list[Any]]]]:
    """Each collection the gate reads: its name and a loader of (settings, chunks, cases)."""
    out = {"demo": datasets.demo_deployment}
    if datasets.HELPCENTRE.exists():
        out["helpcentre"] = datasets.helpcentre_deployment
    out["medline"] = _default(lambda: datasets.beir(DATA / "medline", "test"))
    if not quick:
        out |= {"scifact": _default(lambda: datasets.scifact("test")), "doc2dial": _default(datasets.doc2dial),
                "cast2019": datasets.cast_rewrites("2019"), "cast2020": datasets.cast_rewrites("2020")}
    return out


def routing_gate(settings: Any = None) -> dict[str, Any]:
    """CLINC150 through the default `[routing]` operating point, against the same classifier ungated
    (`settings`: the embedded defaults unless given, e.g. another `[embedding] kind`)."""
    from querywise.config import Settings
    from querywise.embed import embedder_for
    from querywise.evaluation.router import evaluate_router
    from querywise.understand.routing.calibration import OperatingPoint

    raw = datasets.clinc150()

    def rows(*splits: str) -> list[tuple[str, str]]:
        return [(str(t), str(lab)) for split in splits for t, lab in raw[split]]

    settings = settings or Settings()
    r = settings.routing
    point = OperatingPoint(min_answered=r.min_answered, max_deferred=r.max_deferred, min_oos_recall=r.min_oos_recall)
    t = time.perf_counter()
    embedder = embedder_for(settings)
    train, val, test = rows("train", "oos_train"), rows("val", "oos_val"), rows("test", "oos_test")
    gated = evaluate_router(train, test, val=val, embedder=embedder, point=point)
    kind: Literal["centroid", "trained"] = "trained" if gated.classifier == "trained" else "centroid"
    ungated = evaluate_router(train, test, embedder=embedder, classifier=kind, min_margin=0.0)  # no val: no gate chosen
    answered, plain = gated.answered_accuracy or 0.0, ungated.answered_accuracy or 0.0
    oos = gated.oos_recall or 0.0
    holds = answered >= plain and oos >= r.min_oos_recall
    log(f"clinc150: {gated.classifier} in {time.perf_counter() - t:.0f} s; answered {answered:.3f} (ungated {plain:.3f}), "
        f"OOS recall {oos:.3f} (floor {r.min_oos_recall}); " + ("holds" if holds else "broken"))
    return {"classifier": gated.classifier, "choice": gated.choice, "operating_point": point.describe(), "n": gated.n,
            "answered_accuracy": answered, "ungated_accuracy": plain, "deferred_share": gated.deferred_share, "oos_recall": oos,
            "ungated_oos_recall": ungated.oos_recall, "min_oos_recall": r.min_oos_recall, "warnings": gated.warnings, "holds": holds}


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
    routed = routing_gate() if not quick and datasets.CLINC150.exists() else None
    return {"metric": METRIC, "min_slice": MIN_SLICE, "tolerance": TOLERANCE, "collections": results, "routing": routed,
            "holds": all(r["holds"] for r in results.values()) and (routed is None or routed["holds"])}


def markdown(result: dict[str, Any]) -> str:
    out = ["## The defaults gate (`bench/understanding/defaults_gate.py`)", "",
           f"Command: `{result['machine']['command']}`. {result['metric']}, the default deployment (and each of its moves alone) "
           f"minus pass-through, paired, 95% bootstrap interval. Gated: slices of at least {result['min_slice']} cases, "
           f"lower bound >= -{result['tolerance']}. **The gate {'holds' if result['holds'] else 'is broken'}.**", ""]
    out += ["### Each default move on the slice it exists for", "",
            "The move alone minus pass-through, on its own slice (`OWN_SLICE`), where the collection has that slice.", "",
            "| collection | move | slice | n | delta | 95% interval |", "|---|---|---|---|---|---|"]
    for name, c in result["collections"].items():
        for r in c["rows"]:
            if r["arm"].startswith("+") and OWN_SLICE.get(r["arm"][1:]) == r["slice"]:
                out.append(f"| {name} | {r['arm'][1:]} | {r['slice']} | {r['n']} | {r['delta']:+.4f} | [{r['low']:+.4f}, {r['high']:+.4f}] |")
    out.append("")
    if (g := result.get("routing")) is not None:
        out += ["### Routing: CLINC150 (test + oos_test)", "",
                f"The default `[routing]` operating point ({g['operating_point']}), thresholds chosen on val: {g['classifier']} "
                f"({g['choice']}). Answered accuracy {g['answered_accuracy']:.3f} against {g['ungated_accuracy']:.3f} for the same "
                f"classifier routing every message; deferred {g['deferred_share']:.3f}; OOS recall {g['oos_recall']:.3f} "
                f"(floor {g['min_oos_recall']}; ungated {g['ungated_oos_recall'] or 0:.3f}). "
                f"**{'Holds' if g['holds'] else 'Broken'}.**" + ("" if not g["warnings"] else " Warnings: " + "; ".join(g["warnings"])), ""]
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
    ap.add_argument("--quick", action="store_true", help="the demo, the help centre and Medline only")
    ap.add_argument("--command", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    result = run(args.quick)
    name = "defaults_gate-quick" if args.quick else "defaults_gate"
    publish(name, result, command=args.command or COMMAND + (" --quick" if args.quick else ""), render=markdown)
    log(f"wrote bench/results/{name}.json and .md: the gate {'holds' if result['holds'] else 'is broken'}")


if __name__ == "__main__":
    main()
