"""Benchmarks of querywise: scale (build, latency, HNSW recall), BM25 engines, embedding throughput.

Run all with `make bench` (= `.venv/bin/python -m bench.run`); `--quick` for a 10k smoke run.
Data is read at run time from ../shared/data; caches and index folders go to bench/work/
(git-ignored); results to bench/results/.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
WORK = BENCH / "work"
RESULTS = BENCH / "results"
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


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_name() -> str:
    """The CPU's model name and its vector extensions: hosts sold under one name differ (ONNX
    Runtime runs 2x faster where AVX-512 is present), so every figure says which it had."""
    name, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not name:
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        return platform.processor()
    vector = sorted(f for f in flags if f in ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile"))
    return f"{name} ({', '.join(vector) or 'no AVX2'})" if name else platform.processor()


def machine_info() -> dict[str, Any]:
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    cpu = cpu_name()
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    packages = [
        "querywise", "qdrant-edge-py", "qdrant-client", "bm25s", "PyStemmer", "tantivy", "rank-bm25",
        "sentence-transformers", "torch", "onnxruntime", "numpy", "pydantic", "ranx",
    ]
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]) if sys.argv else "",
        "argv": sys.argv,
        "cwd": os.getcwd(),
        "cores": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": round(mem_kib / 2**20, 1),
        "load_avg_at_write": load,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": {p: _version(p) for p in packages},
    }


def write_json(name: str, data: dict[str, Any], command: str | None = None) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    if command:
        info["command"] = command
    out = {"machine": info, **data}
    path = RESULTS / name
    path.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_module(module: str, args: list[str]) -> None:
    """Run `python -m module args` in a child process (clean peak RSS per run), echoing output."""
    cmd = [sys.executable, "-m", module, *args]
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True, cwd=ROOT)
