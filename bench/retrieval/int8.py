"""The int8 embedder against fp32: the quantizer's options, then every visible collection.

    python -m bench.retrieval.int8               # the options on SciFact, then each collection and CLINC150
    python -m bench.retrieval.int8 --no-options  # each collection and CLINC150, `onnx-int8` only
    python -m bench.retrieval.int8 --quick       # the demo and Medline, per channel only

Options (`querywise.embed.INT8_VARIANTS`): ONNX Runtime's dynamic quantization of the fp32 export
with weights scaled per output channel, per tensor (the quantizer's default), per channel with
`reduce_range` (7-bit weights), and "mixed": per channel with the feed-forward output MatMuls of
the first three layers kept in fp32 (chosen by `bench/retrieval/int8_rank.py` on SciFact + Medline
samples). Each is measured on SciFact (5,183 abstracts, 300 test claims): the
smallest and the 1st-percentile cosine between its vector and fp32's over the corpus' and the
queries' texts, and hybrid nDCG@10 as typed (no move; plain RRF).

Collections: the demo, Medline, SciFact and doc2dial, each built and asked exactly as a user
does with `[embedding] kind = "onnx-int8"` against the default ("auto": fp32), every other
setting the collection's own (the defaults gate's loaders): nDCG@10 of the default deployment
(hybrid, default moves) and as typed. CLINC150: the defaults gate's routing row with each
precision (answered accuracy at the default operating point, thresholds on val, reported on
test). The bar: int8 within 0.003 nDCG@10 and 0.3 points of routing accuracy of fp32 everywhere.
Embeddings come from (and go to) the shared on-disk cache, keyed by the variant's model id, which
names the recipe (`querywise.embed.int8_key`: the fp32 export, the quantization, the weights, ONNX
Runtime's version): the report says how many vectors the cache held for each int8 id before the
run (0: every int8 vector measured was made by this run's file).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import time
from collections.abc import Sequence
from typing import Any, get_args

import numpy as np

from bench import WORK, log
from bench.report import publish
from querywise.embed._base import Wrapper

COMMAND = "python -m bench.retrieval.int8"
METRIC = "ndcg@10"
MAX_NDCG_LOSS = 0.003
MAX_ROUTING_LOSS = 0.003  # 0.3 points of accuracy


class _QueriesIn(Wrapper):
    """Measurement only: queries embedded by `inner` (fp32) under the int8 corpus' model id, so an
    int8 index accepts them. Not a product path: the id then names vectors it did not make."""

    def __init__(self, inner: Any, model_id: str) -> None:
        self.inner, self._id = inner, model_id

    @property
    def model_id(self) -> str:
        return self._id

    def embed(self, texts: Sequence[str], *, on_progress: Any = None) -> Any:
        return self.inner.embed(texts, on_progress=on_progress)


def _ndcg(settings: Any, chunks: Sequence[Any], cases: Sequence[Any], name: str, embedder: Any = None,
          fp32_queries: bool = False) -> dict[str, Any]:
    """Build `chunks` with `settings` (and `embedder`, else the settings' own), ask `cases` as typed
    and through the default moves; mean nDCG@10 and per-case scores of each. `fp32_queries`: the
    built index is searched with fp32 query vectors (`_QueriesIn`)."""
    from querywise.config import Settings
    from querywise.embed import embedder_for
    from querywise.evaluation.harness import Arm, run_arm
    from querywise.evaluation.metrics import parse_metrics
    from querywise.index import Index, build_index
    from querywise.service import QueryWise

    metrics = parse_metrics([METRIC])
    path = WORK / f"int8-{name}"
    shutil.rmtree(path, ignore_errors=True)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        ix = stack.enter_context(build_index(chunks, path, settings=settings, embedder=embedder))
        built = time.perf_counter() - started
        if fp32_queries:
            fp32 = embedder_for(settings.model_copy(update={"embedding": Settings().embedding.model_copy(update={"cache": False})}))
            ix.close()
            ix = stack.enter_context(Index.open(path, settings=settings, embedder=_QueriesIn(fp32, ix.manifest.embedder)))
        qw = stack.enter_context(QueryWise(settings, ix))
        out: dict[str, Any] = {"model_id": ix.manifest.embedder, "build_s": round(built, 1)}
        arms = {"as_typed": Arm(name="as typed"), "default": Arm(name="default", moves=tuple(settings.understanding.moves))}
        for key, arm in arms.items():
            result = run_arm(cases, qw, arm, metrics)
            out[key] = round(result.overall[METRIC], 4)
            out[f"{key}_cases"] = {r.id: r.scores[METRIC] for r in result.cases}
    shutil.rmtree(path, ignore_errors=True)
    return out


def _cosines(fp32: Any, other: Any, texts: Sequence[str]) -> dict[str, float]:
    cos = np.sum(fp32.embed(texts) * other.embed(texts), axis=1)
    return {"min": round(float(cos.min()), 4), "p1": round(float(np.percentile(cos, 1)), 4), "mean": round(float(cos.mean()), 5)}


def variants() -> list[dict[str, Any]]:
    """Each quantization option on SciFact: agreement with fp32 and hybrid nDCG@10 as typed."""
    from bench import datasets
    from querywise.config import Settings
    from querywise.embed import CachedEmbedder, Int8Variant, OnnxEmbedder, embedder_for
    from querywise.index.points import SearchTexts

    settings = Settings()
    chunks, cases = datasets.scifact("test")
    texts = list(SearchTexts(chunks))
    queries = [c.message for c in cases]
    cache = settings.cache_dir / "embeddings"
    fp32 = embedder_for(settings)
    rows = [{"variant": "fp32", **_ndcg(settings, chunks, cases, "scifact-fp32", fp32)}]
    for variant in get_args(Int8Variant):
        inner = OnnxEmbedder.int8(export_dir=cache / "models", variant=variant)
        with CachedEmbedder(inner, cache) as embedder:
            row = {"variant": variant, **_ndcg(settings, chunks, cases, f"scifact-{variant}", embedder)}
            row["cosine_corpus"] = _cosines(fp32, embedder, texts)  # both cached by now: look-ups only
            row["cosine_queries"] = _cosines(fp32, inner, queries)
        log(f"scifact {variant}: as typed {row['as_typed']} (fp32 {rows[0]['as_typed']}), min cosine {row['cosine_corpus']['min']}")
        rows.append(row)
    return rows


def collections(quick: bool, scifact: dict[str, Any] | None, *, only: Sequence[str] = (), fp32_queries: bool = False) -> dict[str, Any]:
    """Each collection (of `only`, when given) built and asked with fp32 and with int8 through
    `[embedding] kind`; `fp32_queries`: the int8 index searched with fp32 query vectors too."""
    from bench import datasets
    from bench.understanding.defaults_gate import collections as loaders
    from bench.understanding.defaults_gate import routing_gate
    from querywise.embed import INT8_DEFAULT

    out: dict[str, Any] = {}
    for name, load in loaders(quick).items():
        if name not in (only or ("demo", "medline", "scifact", "doc2dial")):
            continue
        settings, chunks, cases = load()
        cases = [c for c in cases if c.relevant]
        int8_settings = settings.model_copy(update={"embedding": settings.embedding.model_copy(update={"kind": "onnx-int8"})})
        if scifact is not None and name == "scifact":  # measured just above, same builds and cases
            fp32, int8 = scifact["fp32"], scifact[INT8_DEFAULT]
        else:
            fp32 = _ndcg(settings, chunks, cases, f"{name}-fp32")
            int8 = _ndcg(int8_settings, chunks, cases, f"{name}-int8")
        out[name] = _compare(fp32, int8, len(chunks), len(cases))
        if fp32_queries:
            mixed = _ndcg(int8_settings, chunks, cases, f"{name}-int8-fp32-queries", fp32_queries=True)
            out[name]["fp32_queries"] = _compare(fp32, mixed, len(chunks), len(cases))
            log(f"{name} with fp32 queries: default {out[name]['fp32']['default']} -> {mixed['default']}")
        log(f"{name}: default {out[name]['fp32']['default']} -> {out[name]['int8']['default']}, "
            f"as typed {out[name]['fp32']['as_typed']} -> {out[name]['int8']['as_typed']}")
    if not quick and not only and datasets.CLINC150.exists():
        from querywise.config import EmbeddingSettings, Settings

        fp32_route = routing_gate(Settings())
        int8_route = routing_gate(Settings(embedding=EmbeddingSettings(kind="onnx-int8")))
        delta = int8_route["answered_accuracy"] - fp32_route["answered_accuracy"]
        out["clinc150"] = {"fp32": _route_row(fp32_route), "int8": _route_row(int8_route), "answered_delta": round(delta, 4),
                           "holds": delta >= -MAX_ROUTING_LOSS}
    return out


def _route_row(r: dict[str, Any]) -> dict[str, Any]:
    return {k: round(r[k], 4) if isinstance(r[k], float) else r[k] for k in ("classifier", "answered_accuracy", "deferred_share", "oos_recall")}


def _compare(fp32: dict[str, Any], int8: dict[str, Any], n_chunks: int, n_cases: int) -> dict[str, Any]:
    from querywise.evaluation.stats import paired_difference

    row: dict[str, Any] = {"chunks": n_chunks, "cases": n_cases}
    for key in ("as_typed", "default"):
        a, b = fp32[f"{key}_cases"], int8[f"{key}_cases"]
        diffs = np.array([b[i] - a[i] for i in a])
        row[f"{key}_delta"] = round(float(diffs.mean()), 4)
        row[f"{key}_se"] = round(float(diffs.std(ddof=1) / np.sqrt(len(diffs))), 4) if len(diffs) > 1 else None
        row[f"{key}_changed_cases"] = int(np.sum(np.abs(diffs) > 1e-9))
        # The bar is on the mean; the interval says whether a few cases' swaps could make that
        # mean alone (on the demo's 59 cases one rank swap moves it by 0.006).
        d = paired_difference([a[i] for i in a], [b[i] for i in a])
        row[f"{key}_interval"] = {"low": round(d.low, 4), "high": round(d.high, 4), "p_value": round(d.p_value, 3),
                                  "cases_up": int(np.sum(diffs > 1e-9)), "cases_down": int(np.sum(diffs < -1e-9))}
    row["fp32"] = {k: v for k, v in fp32.items() if not k.endswith("_cases")}
    row["int8"] = {k: v for k, v in int8.items() if not k.endswith("_cases")}
    row["holds"] = row["as_typed_delta"] >= -MAX_NDCG_LOSS and row["default_delta"] >= -MAX_NDCG_LOSS
    return row


def cached_rows() -> dict[str, int]:
    """How many vectors the shared cache holds under each int8 variant's model id, now."""
    import sqlite3

    from querywise.config import Settings
    from querywise.embed import INT8_VARIANTS, int8_key, int8_model_id, model_dir
    from querywise.embed._base import MODEL_NAME

    path = Settings().cache_dir / "embeddings" / "embeddings.sqlite3"
    ids = [int8_model_id(MODEL_NAME, int8_key(model_dir(), recipe), variant) for variant, recipe in INT8_VARIANTS.items()]  # type: ignore[arg-type]
    if not path.is_file():
        return dict.fromkeys(ids, 0)
    with sqlite3.connect(path) as db:
        return {i: int(db.execute("SELECT count(*) FROM vectors WHERE model_id = ?", [i]).fetchone()[0]) for i in ids}


def run(quick: bool, options: bool = True, only: Sequence[str] = (), fp32_queries: bool = False) -> dict[str, Any]:
    before = cached_rows()
    rows = variants() if options and not quick else []
    by_variant = {r["variant"]: r for r in rows}
    per = collections(quick, by_variant if rows else None, only=only, fp32_queries=fp32_queries)
    return {"metric": METRIC, "max_ndcg_loss": MAX_NDCG_LOSS, "max_routing_loss": MAX_ROUTING_LOSS, "cached_before": before,
            "variants": [{k: v for k, v in r.items() if not k.endswith("_cases")} for r in rows],
            "collections": per, "holds": all(c["holds"] for c in per.values())}


def _interval(d: dict[str, Any] | None) -> str:
    return "-" if d is None else f"{d['low']:+.4f} .. {d['high']:+.4f} ({d['p_value']})"


def _se(c: dict[str, Any], key: str) -> str:
    se = c.get(f"{key}_se")
    return "" if se is None else f" ({se:.4f})"


def _moved(c: dict[str, Any]) -> str:
    d = c.get("default_interval")
    return str(c["default_changed_cases"]) if d is None else f"{d['cases_up']} / {d['cases_down']}"


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = ["## The int8 embedder against fp32 (`bench/retrieval/int8.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), load average at the end {m['load_avg_at_write']}.", ""]
    if result["variants"]:
        lines += ["### Quantization options on SciFact (5,183 abstracts, 300 test claims)", "",
                  "| variant | model id | hybrid nDCG@10 as typed | default deployment | min cosine to fp32 (corpus) | 1st pct | min cosine (queries) | build s* |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in result["variants"]:
            c, q = r.get("cosine_corpus", {}), r.get("cosine_queries", {})
            lines.append(f"| {r['variant']} | {r['model_id']} | {r['as_typed']:.4f} | {r['default']:.4f} | {c.get('min', 1.0)} | {c.get('p1', 1.0)} | "
                         f"{q.get('min', 1.0)} | {r['build_s']} |")
        lines.append("")
    elif "clinc150" in result["collections"]:  # a full run without the options
        lines += ["The quantizer's options on SciFact (per tensor, `reduce_range`, mixed) were last measured with activations "
                  "scaled per batch and int8 ids that did not name their recipe: bench/results/int8.md at commit ff24204.", ""]
    measured = sorted({c["int8"]["model_id"] for c in result["collections"].values() if "model_id" in c.get("int8", {})})
    lines += [f"### Each collection, fp32 (`[embedding] kind = \"auto\"`) against `\"onnx-int8\"` as it built then ({', '.join(measured)})", "",
              f"nDCG@10, paired over the same cases; the bar is a loss of at most {result['max_ndcg_loss']} of the mean (routing: "
              f"{result['max_routing_loss'] * 100:.1f} points). The interval is the paired bootstrap's 95% interval of the default "
              "deployment's delta and p the sign-flip test's (querywise.evaluation.stats, seed 42).", "",
              "| collection | chunks | cases | as typed fp32 | int8 | delta (paired SE) | default fp32 | int8 | delta (paired SE) | 95% interval (p) | cases up / down | build s* fp32 / int8 | holds |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, c in result["collections"].items():
        if name == "clinc150":
            continue
        f, i = c["fp32"], c["int8"]
        lines.append(f"| {name} | {c['chunks']} | {c['cases']} | {f['as_typed']:.4f} | {i['as_typed']:.4f} | {c['as_typed_delta']:+.4f}{_se(c, 'as_typed')} | "
                     f"{f['default']:.4f} | {i['default']:.4f} | {c['default_delta']:+.4f}{_se(c, 'default')} | {_interval(c.get('default_interval'))} | "
                     f"{_moved(c)} | "
                     f"{f['build_s']} / {i['build_s']} | {'yes' if c['holds'] else '**no**'} |")
    mixed = {n: c["fp32_queries"] for n, c in result["collections"].items() if "fp32_queries" in c}
    if mixed:
        lines += ["", "The same int8 indexes searched with fp32 query vectors (measurement only: the corpus int8, each query fp32), "
                  "against fp32 throughout:", "",
                  "| collection | as typed fp32 | int8 corpus, fp32 queries | delta (paired SE) | default fp32 | int8 corpus, fp32 queries | "
                  "delta (paired SE) | 95% interval (p) | cases up / down | holds |", "|---|---|---|---|---|---|---|---|---|---|"]
        for name, c in mixed.items():
            f, i = c["fp32"], c["int8"]
            lines.append(f"| {name} | {f['as_typed']:.4f} | {i['as_typed']:.4f} | {c['as_typed_delta']:+.4f}{_se(c, 'as_typed')} | "
                         f"{f['default']:.4f} | {i['default']:.4f} | {c['default_delta']:+.4f}{_se(c, 'default')} | "
                         f"{_interval(c.get('default_interval'))} | {_moved(c)} | {'yes' if c['holds'] else '**no**'} |")
    if "clinc150" in result["collections"]:
        c = result["collections"]["clinc150"]
        lines += ["", "CLINC150 routing (default operating point, thresholds on val, test + oos_test): answered accuracy "
                  f"fp32 {c['fp32']['answered_accuracy']:.4f} ({c['fp32']['classifier']}, deferred {c['fp32']['deferred_share']:.3f}, "
                  f"OOS recall {c['fp32']['oos_recall']:.3f}), int8 {c['int8']['answered_accuracy']:.4f} ({c['int8']['classifier']}, "
                  f"deferred {c['int8']['deferred_share']:.3f}, OOS recall {c['int8']['oos_recall']:.3f}): "
                  f"{c['answered_delta'] * 100:+.2f} points; {'holds' if c['holds'] else '**broken**'}."]
    if "cached_before" in result:
        held = ", ".join(f"{k}: {v:,}" for k, v in result["cached_before"].items())
        lines += ["", f"Vectors the shared cache held for each int8 id before the run: {held}."]
    lines += ["", "*Build seconds include embedding only for vectors the shared cache did not hold yet (fp32's mostly did): "
              "they are not a speed comparison; bench/results/embed_throughput.json is.",
              "", f"**{'int8 holds on every collection' if result['holds'] else 'int8 does not hold everywhere'}.**"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the demo and Medline, per channel only")
    ap.add_argument("--no-options", action="store_true", help="skip the quantizer's options on SciFact")
    ap.add_argument("--fp32-queries", default="", metavar="NAMES",
                    help="only these collections (comma-separated), the int8 index also searched with fp32 query vectors")
    args = ap.parse_args(argv)
    only = [n for n in args.fp32_queries.split(",") if n]
    result = run(args.quick, options=not args.no_options and not only, only=only, fp32_queries=bool(only))
    name = "int8-fp32-queries" if only else "int8-quick" if args.quick else "int8"
    flags = (" --quick" if args.quick else "") + (" --no-options" if args.no_options else "") + (f" --fp32-queries {args.fp32_queries}" if only else "")
    publish(name, result, command=COMMAND + flags, render=markdown)
    log(f"wrote bench/results/{name}.json and .md: {'holds' if result['holds'] else 'does not hold'}")


if __name__ == "__main__":
    main()
