"""Filters measured per field (#36): a labelled set of messages over the demo catalog.

    .venv/bin/python -m bench.understanding.filters_fields

`tests/fixtures/filters_labelled.jsonl`: 225 messages written for this benchmark, each with the
filters a person would extract (in the validator's shape) and its kind: enums, prices, exclusions
("not from Halden"), units ("under 250 g", "at least 10 days of battery"), bare numbers, relative
dates ("released last year" from today = 2025-06-10), comparisons ("cheaper than the Solace 7"),
references ("like the Knoll but cheaper") and attempts to set access ("set market to us").
The schema is the demo's plus two measured fields (`battery_hours`, `weight_g`), whose values
for the demo's devices are `tests/fixtures/filters_demo_measures.json`.

The set was written by the people who wrote the rules: read its figures as coverage of known
phrasings, not of unseen ones. Nothing is fitted on it.

Measured:
- exact match per field: over the messages where the label or the extraction constrains the
  field, the share where both give the same conditions (numbers to 0.01); and per message;
- zero-result rate with and without the move: every message planned and run on the demo index
  (the default moves, then the same without `filters`), the share of searched plans with no hit;
  and the share of the product pages in the top 10 whose catalog entry meets the label;
- access changes: plans whose access differs from the session's, or whose filters touch an access
  field (must be 0).

Writes bench/results/filters_fields.json and filters_fields.md.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path
from typing import Any

from bench import ROOT, WORK, log
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.understanding.filters_fields"
LABELLED = ROOT / "tests" / "fixtures" / "filters_labelled.jsonl"
MEASURES = ROOT / "tests" / "fixtures" / "filters_demo_measures.json"
TODAY = date(2025, 6, 10)


def settings_and_catalog(work: Path) -> Any:
    """The demo deployment with two measured filter fields and a catalog that carries them."""
    from querywise.config import FilterField, load_settings
    from querywise.demo import demo_file

    base = load_settings(demo_file("querywise.toml"))
    extra = json.loads(MEASURES.read_text(encoding="utf-8"))["fields"]
    work.mkdir(parents=True, exist_ok=True)
    catalog = work / "catalog.jsonl"
    rows = [json.loads(line) for line in demo_file("catalog.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    catalog.write_text("\n".join(json.dumps({**r, **extra.get(r["id"], {})}) for r in rows) + "\n", encoding="utf-8")
    fields = {
        **base.filters.fields,
        "battery_hours": FilterField(type="number", min=0, max=10000, unit="hour", aliases=["battery", "battery life"]),
        "weight_g": FilterField(type="number", min=0, max=100000, unit="g", aliases=["weight", "weighs", "weigh"]),
    }
    return base.model_copy(update={"deployment": base.deployment.model_copy(update={"catalog": catalog, "plan_log": None}),
                                   "filters": base.filters.model_copy(update={"fields": fields})})


def canonical(where: Any) -> dict[str, set[tuple[Any, ...]]]:
    """Conditions by field, in one comparable form (bounds to 0.01, values sorted)."""
    from querywise.conditions import AnyOf, Match, NoneOf, Range

    out: dict[str, set[tuple[Any, ...]]] = defaultdict(set)
    for c in where.conditions:
        if isinstance(c, Match):
            out[c.field].add(("in", (c.value,)))
        elif isinstance(c, AnyOf):
            out[c.field].add(("in", tuple(sorted(map(str, c.values)))))
        elif isinstance(c, NoneOf):
            out[c.field].add(("not", tuple(sorted(map(str, c.values)))))
        elif isinstance(c, Range):
            out[c.field].add(("range", *(None if v is None else round(v, 2) for v in (c.gt, c.gte, c.lt, c.lte))))
    return dict(out)


def extraction_scores(rows: list[dict[str, Any]], settings: Any) -> dict[str, Any]:
    from querywise.catalog import Catalog
    from querywise.checks.filters import validate_filters
    from querywise.understand.filters import extract_filters

    catalog = Catalog.load(settings.deployment.catalog)
    per_field: dict[str, Counter[str]] = defaultdict(Counter)
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    for row in rows:
        expected_where, dropped = validate_filters(row["filters"], settings.filters, catalog=catalog)
        if dropped:
            raise ValueError(f"label of {row['message']!r} does not validate: {dropped}")
        ex = extract_filters(row["message"], settings.filters, catalog=catalog, today=TODAY, access=settings.access)
        expected, got = canonical(expected_where), canonical(ex.where)
        wrong = sorted(f for f in set(expected) | set(got) if expected.get(f) != got.get(f))
        for f in set(expected) | set(got):
            per_field[f]["n"] += 1
            per_field[f]["exact"] += f not in wrong
            per_field[f]["labelled"] += f in expected
            per_field[f]["extracted"] += f in got
        per_kind[row["kind"]]["n"] += 1
        per_kind[row["kind"]]["exact"] += not wrong
        if wrong:
            misses.append({"kind": row["kind"], "message": row["message"], "fields": wrong,
                           "expected": {f: sorted(map(str, expected.get(f, ()))) for f in wrong},
                           "got": {f: sorted(map(str, got.get(f, ()))) for f in wrong}})
    def rate(c: Counter[str]) -> float:
        return round(c["exact"] / c["n"], 4) if c["n"] else 0.0

    return {
        "n": len(rows),
        "messages_exact": round(sum(c["exact"] for c in per_kind.values()) / len(rows), 4),
        "per_field": {f: {**c, "rate": rate(c)} for f, c in sorted(per_field.items())},
        "per_kind": {k: {**c, "rate": rate(c)} for k, c in sorted(per_kind.items())},
        "misses": misses,
    }


def retrieval_effects(rows: list[dict[str, Any]], settings: Any) -> dict[str, Any]:
    """Each message planned and run with the default moves and without `filters`."""
    from querywise.catalog import Catalog
    from querywise.checks.filters import validate_filters
    from querywise.config import UnderstandingSettings
    from querywise.demo import demo_corpus
    from querywise.embed import embedder_for
    from querywise.index import build_index
    from querywise.service import QueryWise
    from querywise.understand.access import access_from_session

    embedder = embedder_for(settings)
    index = build_index(demo_corpus(), WORK / "filters-fields-index", settings=settings, embedder=embedder)
    access_payloads = set(settings.access.fields.values())
    catalog = Catalog.load(settings.deployment.catalog)
    by_id = {e.id: e for e in catalog.entities}
    labels = {row["message"]: validate_filters(row["filters"], settings.filters, catalog=catalog)[0] for row in rows}
    arms = {"with filters": list(settings.understanding.moves),
            "without filters": [m for m in settings.understanding.moves if m != "filters"]}
    out: dict[str, Any] = {}
    try:
        for arm, moves in arms.items():
            qw = QueryWise(settings.model_copy(update={"understanding": UnderstandingSettings(moves=moves)}), index, embedder=embedder)
            counts: Counter[str] = Counter()
            for row in rows:
                session = row["session"]
                result = qw.ask(row["message"], session=session, today=TODAY)
                plan = result.plan
                counts["plans"] += 1
                changed = plan.access != access_from_session(session, settings.access) or any(
                    c.field in access_payloads for c in (plan.filters & plan.inferred_filters).conditions)
                counts["access_changes"] += changed
                if not plan.queries:
                    counts["not_searched"] += 1
                    continue
                counts["searched"] += 1
                counts["zero_results"] += not result.hits
                counts["relaxed"] += bool(result.relaxed)
                label = labels[row["message"]]
                if label:  # the product pages among the hits that meet what the person asked for
                    pages = [by_id[h.id.removeprefix("product:")] for h in result.hits if h.id.startswith("product:")]
                    counts["product_hits"] += len(pages)
                    counts["product_hits_meeting_label"] += sum(label.matches(e.fields) for e in pages)
            qw.close()
            out[arm] = {**counts, "zero_result_rate": round(counts["zero_results"] / counts["searched"], 4) if counts["searched"] else 0.0,
                        "product_hits_meeting_label_rate": round(counts["product_hits_meeting_label"] / counts["product_hits"], 4) if counts["product_hits"] else 0.0}
    finally:
        index.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-retrieval", action="store_true", help="only the extraction figures (no model, no index)")
    args = parser.parse_args()
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line.strip()]
    settings = settings_and_catalog(WORK / "filters-fields")
    result: dict[str, Any] = {"today": TODAY.isoformat(), "set": str(LABELLED.relative_to(ROOT)), "extraction": extraction_scores(rows, settings)}
    if not args.no_retrieval:
        result["retrieval"] = retrieval_effects(rows, settings)
    path = publish("filters_fields", result, command=COMMAND + (" --no-retrieval" if args.no_retrieval else ""), render=markdown)
    log(path.with_suffix(".md").read_text(encoding="utf-8"))


def markdown(r: dict[str, Any]) -> str:
    ex = r["extraction"]
    lines = ["# Filters per field, on a labelled set over the demo catalog", "", f"Command: `{r['machine']['command']}`.", "",
             f"{ex['n']} messages (`{r['set']}`), written with the rules by their authors: coverage of known phrasings, not of unseen ones. "
             f"Today = {r['today']}. Schema: the demo's (category, brand, price_usd, released) plus battery_hours (hour) and weight_g (g).", "",
             f"**Messages whose filters all match the label: {ex['messages_exact']:.3f}.**", "",
             "| field | messages (label or extraction) | labelled | extracted | exact | exact rate |", "|---|---|---|---|---|---|"]
    for f, c in ex["per_field"].items():
        lines.append(f"| {f} | {c['n']} | {c['labelled']} | {c['extracted']} | {c['exact']} | {c['rate']:.3f} |")
    lines += ["", "| kind | messages | all fields exact | rate |", "|---|---|---|---|"]
    for k, c in ex["per_kind"].items():
        lines.append(f"| {k} | {c['n']} | {c['exact']} | {c['rate']:.3f} |")
    if "retrieval" in r:
        lines += ["", "Run on the demo index (help centre + product pages; the default moves, and the same without `filters`); "
                  "a plan whose route searches nothing is not counted in the zero-result rate.", "",
                  "Product pages meeting the label: of the product pages in the top 10 of the messages with a labelled filter, the share whose "
                  "catalog entry meets it (what the filters are for; help articles carry no field and are kept, `[filters] missing`).", "",
                  "| arm | plans | searched | zero results | zero-result rate | relaxed | product pages in top 10 | meeting the label | access changes |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for arm, c in r["retrieval"].items():
            lines.append(f"| {arm} | {c['plans']} | {c['searched']} | {c['zero_results']} | {c['zero_result_rate']:.3f} | {c.get('relaxed', 0)} | "
                         f"{c.get('product_hits', 0)} | {c.get('product_hits_meeting_label_rate', 0):.3f} | {c['access_changes']} |")
    lines += ["", f"Misses ({len(ex['misses'])}):", ""]
    lines += [f"- [{m['kind']}] {m['message']!r}: " + "; ".join(f"{f}: expected {m['expected'][f]}, got {m['got'][f]}" for f in m["fields"]) for m in ex["misses"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
