"""querywise on the user's path, for bench/retrieval/peers.py: the commands the README types.

Each row is a folder built by `querywise index SOURCE --index DIR --skip-invalid` in a fresh Python
process with the default settings (or one TOML line changed), against a cache folder of its own
(`QUERYWISE_CACHE_DIR`, empty): a cold first build, so the ONNX export (in a child process of the
build, `querywise/embed/_export.py`) and every vector are made inside its time. It is then scored by
`querywise eval SOURCE --split test -i DIR --json` (`QueryWise.ask`: the default moves, hybrid),
and `querywise-tuned` runs `querywise tune SOURCE --split train -i DIR --write-config tuned.toml`
on the default row's folder first, as the README's "Search modes" does.

Memory of a command: the peak of its whole process tree's PSS (the BM25 analysis forks workers
that share pages with the parent; PSS counts a shared page once), sampled every 50 ms from
/proc, beside the command's own VmHWM-equivalent (`ru_maxrss` of the process, from wait4).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAMPLE_S = 0.05
EXPORT_MARK = "querywise/embed/_export.py"  # the child a first build exports the ONNX model in (run by path)


@dataclass(frozen=True)
class UserRow:
    """One querywise row on the user's path: its TOML (the defaults when empty) and whether the
    README's `tune` chose its fusion first (on the default row's folder when the TOML is the
    defaults, else on the row's own build)."""

    name: str
    toml: str = ""
    tuned: bool = False


ROWS = {
    "querywise": UserRow("querywise"),
    "querywise-tuned": UserRow("querywise-tuned", tuned=True),
    "querywise-int8": UserRow("querywise-int8", toml='[embedding]\nkind = "onnx-int8"\n'),
    # The README's advice for claims against abstracts: build with sentence vectors, each abstract
    # kept whole (a limit above SciFact's longest, 10,000 characters), then tune (which also
    # chooses sentence_share). Whole records held out above cut ones on the train queries
    # (bench/results/sentence_build.md).
    "querywise-sentences-tuned": UserRow("querywise-sentences-tuned", toml="[index]\nsentence_vectors = true\n\n[chunking]\nmax_chars = 20000\n",
                                         tuned=True),
}


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return out


def _pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def tree_pss_mib(pid: int, mark: str = "") -> tuple[float, bool]:
    """The summed PSS of `pid` and every descendant, MiB, and whether a descendant's command line
    holds `mark` (the ONNX export's child, timed from the outside)."""
    todo, total, marked = [pid], 0, False
    while todo:
        p = todo.pop()
        total += _pss_kib(p)
        kids = _children(p)
        marked = marked or (bool(mark) and any(mark in _cmdline(k) for k in kids))
        todo += kids
    return total / 1024.0, marked


def run_measured(cmd: Sequence[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Run `cmd`; its wall seconds, the peak PSS of its process tree and its own peak RSS.
    A failure raises with its stderr's tail."""
    started = time.perf_counter()
    proc = subprocess.Popen(list(cmd), env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak, marked_s = [0.0], [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_S):
            pss, marked = tree_pss_mib(proc.pid, EXPORT_MARK)
            peak[0] = max(peak[0], pss)
            marked_s[0] += SAMPLE_S if marked else 0.0

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    # communicate() drains both pipes; the rusage of that one child comes from wait4 afterwards,
    # so Popen must not reap it first: poll through os.wait4 on its pid instead.
    out_chunks: list[str] = []
    err_chunks: list[str] = []
    readers = [threading.Thread(target=lambda f=f, acc=acc: acc.append(f.read()), daemon=True)
               for f, acc in ((proc.stdout, out_chunks), (proc.stderr, err_chunks))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    stop.set()
    sampler.join()
    for r in readers:
        r.join()
    stdout, stderr = "".join(out_chunks), "".join(err_chunks)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {stderr[-2000:]}")
    return {"seconds": round(seconds, 2), "tree_peak_pss_mb": round(peak[0], 1), "own_peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1),
            "export_s": round(marked_s[0], 1), "stdout": stdout}


def querywise_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "querywise", *args]


def build_and_eval(row: UserRow, source: Path, work: Path, root: Path, base_index: Path | None = None) -> dict[str, Any]:
    """`row` as a user makes it: index (or, tuned, tune the default row's folder), then eval on test.
    Returns the row's figures and where its folder, config and cache are (for the serving child)."""
    folder = work / f"{row.name}-user"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cache = folder / "cache"  # empty: a first build on this machine
    config = folder / "querywise.toml"
    config.write_text(row.toml, encoding="utf-8")
    env = {**os.environ, "QUERYWISE_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    out: dict[str, Any] = {"config_toml": row.toml or "(defaults)", "load_avg_1min_build": [round(os.getloadavg()[0], 2)]}
    if row.tuned and base_index is None:
        assert row.toml, "the tuned row of the defaults tunes the default row's folder"
        out |= _build(config, source, folder / "index", env, root)
        base_index = folder / "index"
    if row.tuned:
        assert base_index is not None
        index = base_index
        env["QUERYWISE_CACHE_DIR"] = str(base_index.parent / "cache")  # that folder's export and vectors
        tuned = folder / "tuned.toml"
        done = run_measured(querywise_cmd("tune", str(source), "--split", "train", "-i", str(index), "-c", str(config),
                                          "--write-config", str(tuned), "--skip-invalid", "--json"), env, root)
        out |= {"tune_s": done["seconds"], "tune_peak_pss_mb": done["tree_peak_pss_mb"], "chosen": _tune_choice(done["stdout"])}
        config = tuned if tuned.is_file() else config  # tune writes nothing when the fusion did not beat plain RRF
    else:
        index = folder / "index"
        out |= _build(config, source, index, env, root)
    out["load_avg_1min_build"].append(round(os.getloadavg()[0], 2))
    done = run_measured(querywise_cmd("eval", str(source), "--split", "test", "-i", str(index), "-c", str(config), "--skip-invalid",
                                      "--metrics", "ndcg@10,recall@100", "--json"), env, root)
    report = json.loads(done["stdout"])
    overall = report["overall"]
    out |= {"ndcg@10": round(float(overall["ndcg@10"]), 4), "recall@100": round(float(overall["recall@100"]), 4),
            "n_queries": int(report.get("n", len(report.get("cases", [])))), "eval_s": done["seconds"],
            "index": str(index), "config": str(config), "cache": env["QUERYWISE_CACHE_DIR"]}
    return out


def _build(config: Path, source: Path, index: Path, env: dict[str, str], root: Path) -> dict[str, Any]:
    """`querywise index` with `config`: its wall time, the export's share of it and its memory."""
    done = run_measured(querywise_cmd("index", str(source), "--index", str(index), "-c", str(config), "--skip-invalid"), env, root)
    # export_s: how long the ONNX export's child lived (sampled); the build without it is what
    # every later first build of another corpus on this machine costs.
    return {"build_s": done["seconds"], "export_s": done["export_s"], "build_s_without_export": round(done["seconds"] - done["export_s"], 1),
            "peak_pss_mb": done["tree_peak_pss_mb"], "own_peak_rss_mb": done["own_peak_rss_mb"]}


def _tune_choice(stdout: str) -> str:
    try:
        data = json.loads(stdout)
    except ValueError:
        return "?"
    chosen = data.get("chosen", "?")
    if not isinstance(chosen, dict):
        return str(chosen)
    return " ".join(f"{k}={v}" for k, v in chosen.items() if v is not None)


def beir_subset(source: Path, out: Path, doc_ids: set[str], query_ids: set[str]) -> Path:
    """A BEIR folder holding only `doc_ids` and the judgements of `query_ids` (smoke runs)."""
    shutil.rmtree(out, ignore_errors=True)
    (out / "qrels").mkdir(parents=True)
    with gzip.open(source / "corpus.jsonl.gz", "rt", encoding="utf-8") as src, gzip.open(out / "corpus.jsonl.gz", "wt", encoding="utf-8") as dst:
        dst.writelines(line for line in src if str(json.loads(line)["_id"]) in doc_ids)
    for split in ("train", "test"):
        lines = (source / "qrels" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()
        kept = [ln for ln in lines[1:] if ln.split("\t")[0] in query_ids and ln.split("\t")[1] in doc_ids]
        (out / "qrels" / f"{split}.tsv").write_text("\n".join([lines[0], *kept]) + "\n", encoding="utf-8")
    shutil.copy(source / "queries.jsonl", out / "queries.jsonl")
    return out
