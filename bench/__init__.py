"""Benchmarks of querywise, by concern: bench/retrieval, understanding, routing, triage, service.

Run them with `make bench` (= `.venv/bin/python -m bench.run`; `make bench ARGS=--quick` for the
quick suite) or one with `python -m bench.run NAME` (bench/run.py lists the registry). Data sets
are read at run time from ../shared/data through bench/datasets.py; caches and index folders go to
bench/work/ (git-ignored); results to bench/results/, written and rendered by bench/report.py.
This module holds the paths and the small timing helpers every benchmark shares.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
WORK = BENCH / "work"
RESULTS = Path(os.environ.get("QUERYWISE_BENCH_RESULTS", BENCH / "results"))  # tests/bench writes elsewhere
DATA = Path(os.environ.get("QUERYWISE_BENCH_DATA", ROOT.parent / "shared" / "data"))

try:  # the venv normally has querywise installed editable (`make setup`); fall back to src/
    import querywise  # noqa: F401
except ModuleNotFoundError:  # pragma: no cover
    sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402


def percentiles(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean/max of a list of durations, in milliseconds."""
    a = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "p50_ms": round(float(np.percentile(a, 50)), 3),
        "p95_ms": round(float(np.percentile(a, 95)), 3),
        "mean_ms": round(float(a.mean()), 3),
        "max_ms": round(float(a.max()), 3),
        "n": int(a.size),
    }


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB.

    VmHWM from /proc/self/status: getrusage's ru_maxrss of a child started by subprocess also
    carries the parent's RSS at fork time (the kernel keeps the pre-exec high-water mark), which
    would charge the benchmark driver's memory to the measured index. Falls back to getrusage.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def dir_size_mib(path: Path, *, apparent: bool = False) -> float:
    """Disk space used by a folder (allocated blocks; `apparent=True`: sum of file sizes, which
    counts the sparse, preallocated pages of Qdrant's storage files as if written)."""
    total = 0
    for p in Path(path).rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            total += st.st_size if apparent else st.st_blocks * 512
    return round(total / 2**20, 2)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_module(module: str, args: list[str]) -> None:
    """Run `python -m module args` in a child process (clean peak RSS per run), echoing output."""
    cmd = [sys.executable, "-m", module, *args]
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, cwd=ROOT)
