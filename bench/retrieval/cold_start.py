"""Peak memory of a first build against a warm one: the ONNX export stays out of the building process.

    python -m bench.retrieval.cold_start                   # SciFact as the README indexes it
    python -m bench.retrieval.cold_start --source DIR      # another corpus

Two builds, each `querywise index SOURCE --index DIR --skip-invalid` with the default settings in
a fresh Python process, against a cache folder of their own (`QUERYWISE_CACHE_DIR`): the first
finds no ONNX export there and makes it (in a child process: `querywise/embed/_export.py`, and int8 is quantized in another, `_quantize.py`), the
second finds it. The text vectors are copied in from the shared cache first (SQLite's backup),
so both builds read them and the difference is the export alone; `--cold-vectors` embeds them
too. Each build reports its own peak RSS (`getrusage(RUSAGE_SELF)`), the largest child's
(`RUSAGE_CHILDREN`: the export), its wall time and whether torch was ever imported in it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from bench import DATA, WORK, log
from bench.report import publish

COMMAND = "python -m bench.retrieval.cold_start"
# Runs one CLI build in this (child) process and prints what it cost as one JSON line.
_BUILD = """
import json, resource, sys, time
from querywise.cli import app
started = time.perf_counter()
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"peak_rss_mib": round(own.ru_maxrss / 1024, 1), "largest_child_rss_mib": round(kids.ru_maxrss / 1024, 1),
                      "wall_s": round(time.perf_counter() - started, 1), "torch_imported": "torch" in sys.modules}))
"""


def _build(source: Path, index: Path, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "QUERYWISE_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _BUILD, "index", str(source), "--index", str(index), "--skip-invalid"],
                          env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(source: Path, cold_vectors: bool) -> dict[str, Any]:
    from querywise.config import default_cache_dir

    cache = WORK / "cold-start-cache"
    shutil.rmtree(cache, ignore_errors=True)
    (cache / "embeddings").mkdir(parents=True)
    if not cold_vectors:  # the vectors, not the export: a consistent copy even while others write
        shared = default_cache_dir() / "embeddings" / "embeddings.sqlite3"
        with closing(sqlite3.connect(shared)) as src, closing(sqlite3.connect(cache / "embeddings" / "embeddings.sqlite3")) as dst:
            src.backup(dst)
    rows = {}
    for name in ("first", "warm"):
        index = WORK / f"cold-start-{name}"
        shutil.rmtree(index, ignore_errors=True)
        rows[name] = _build(source, index, cache)
        log(f"{name} build: {rows[name]}")
        shutil.rmtree(index, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    first, warm = rows["first"], rows["warm"]
    return {"source": str(source), "vectors": "embedded" if cold_vectors else "copied from the shared cache", **rows,
            "holds": first["peak_rss_mib"] <= warm["peak_rss_mib"] * 1.02 and not first["torch_imported"]}


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = ["## A first build against a warm one (`bench/retrieval/cold_start.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores, load average at the end {m['load_avg_at_write']}. "
             f"`querywise index {result['source']} --skip-invalid`, default settings, vectors {result['vectors']}.", "",
             "| build | peak RSS of the building process MiB | largest child MiB (the export) | wall s | torch imported in it |",
             "|---|---|---|---|---|"]
    for name in ("first", "warm"):
        r = result[name]
        lines.append(f"| {name} | {r['peak_rss_mib']} | {r['largest_child_rss_mib']} | {r['wall_s']} | {r['torch_imported']} |")
    lines += ["", f"**{'The first build peaks no higher than a warm one (within 2%).' if result['holds'] else 'The first build peaks higher.'}**"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=DATA / "scifact")
    ap.add_argument("--cold-vectors", action="store_true", help="embed the corpus too, not only export the model")
    args = ap.parse_args(argv)
    result = run(args.source, args.cold_vectors)
    publish("cold_start", result, command=COMMAND + (" " + " ".join(sys.argv[1:]) if argv is None and sys.argv[1:] else ""), render=markdown)
    log(f"wrote bench/results/cold_start.json and .md: {'holds' if result['holds'] else 'does not hold'}")


if __name__ == "__main__":
    main()
