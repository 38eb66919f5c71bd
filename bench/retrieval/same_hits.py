"""Every hit of SciFact's test queries, whole, as JSON: run once per querywise source tree and compare
the files byte for byte, to show a change to the read path returns the same hits (ids, scores,
ranks, texts, titles, payloads).

    PYTHONPATH=OTHER/src:. python -m bench.retrieval.same_hits --index DIR [--config TOML] --out before.json
    PYTHONPATH=src:.       python -m bench.retrieval.same_hits --index DIR [--config TOML] --out after.json
    cmp before.json after.json

Each test query is searched dense, bm25 and hybrid (k = 100), and the first one also under a
filter; payload keys are sorted (their order is not part of a hit's value).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from bench import datasets, log

K = 100


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True, help="a SciFact index folder")
    ap.add_argument("--config", type=Path, help="the TOML it is opened with (default settings when absent)")
    ap.add_argument("--out", type=Path, required=True, help="where the hits are written")
    args = ap.parse_args(argv)

    from querywise.conditions import Match, Where
    from querywise.config import Settings, load_settings
    from querywise.index import Index

    settings = load_settings(args.config) if args.config else Settings()
    _, by_id, _ = datasets.scifact_test()
    queries = list(by_id.values())
    searches: list[list[dict[str, object]]] = []
    with Index.open(args.index, settings=settings) as ix:
        for q in queries:
            for mode in ("dense", "bm25", "hybrid"):
                searches.append([h.model_dump() for h in ix.search(q, mode=mode, k=K)])
        first = ix.search(queries[0], k=K)[0]
        where = Where(conditions=(Match(field="doc_id", value=first.doc_id),))
        searches.append([h.model_dump() for h in ix.search(queries[0], k=20, where=where)])
    args.out.write_text(json.dumps(searches, sort_keys=True), encoding="utf-8")
    log(f"{len(searches)} searches, {sum(map(len, searches))} hits -> {args.out}")


if __name__ == "__main__":
    main()
