"""Run the benchmark suite (bench/registry.py) and re-render bench/results/README.md.

    make bench                         # = .venv/bin/python -m bench.run: every benchmark, full (hours on 2 cores)
    make bench ARGS=--quick            # the quick suite (smaller sizes; benchmarks marked quick only)
    python -m bench.run --quick        # the same, without make
    python -m bench.run NAME [NAME..]  # some benchmarks (full arguments; with --quick, their quick ones)
    python -m bench.run --list         # the registry: names, quick arguments, expected minutes
    python -m bench.run --readme       # only re-render README.md from the JSON files

A NAME is a benchmark's module under bench/ ("retrieval.scale"), its file name ("scale") or an
alias (the name it had before the suite was split by concern, e.g. "bm25", "router"). Each
benchmark runs in a child process (`python -m bench.<name>`), so its peak memory is its own.
"""

from __future__ import annotations

import argparse
import time

from bench import log, run_module
from bench.registry import BENCHMARKS, Benchmark, find
from bench.report import render_readme


def arguments(b: Benchmark, *, quick: bool, me: str) -> list[str]:
    """The command line `bench.run` gives `b`."""
    args = list(b.quick if quick and b.quick is not None else b.args)
    if b.records_command:
        args += ["--command", f"{me} → python -m {b.module} {' '.join(args)}"]
    return args


def listing() -> str:
    rows = [f"{'name':<30} {'full min':>8} {'quick min':>9}  quick arguments"]
    for b in BENCHMARKS:
        quick = "–" if b.quick is None else " ".join(b.quick) or "(none)"
        rows.append(f"{b.name:<30} {b.minutes:>8g} {b.quick_minutes if b.quick is not None else '–':>9}  {quick}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all; with --quick, the quick suite)")
    ap.add_argument("--quick", action="store_true", help="the quick suite: smaller sizes, quick benchmarks only")
    ap.add_argument("--readme", action="store_true", help="only re-render README.md")
    ap.add_argument("--list", action="store_true", help="print the registry and exit")
    ap.add_argument("--skip", default="", help="comma-separated names to leave out")
    a = ap.parse_args(argv)
    if a.list:
        print(listing())
        return
    if a.readme:
        log(f"wrote {render_readme()}")
        return
    skip = set(filter(None, a.skip.split(",")))
    chosen = [find(n) for n in a.names] if a.names else [b for b in BENCHMARKS if not a.quick or b.quick is not None]
    chosen = [b for b in chosen if not any(b.matches(s) for s in skip)]
    me = "python -m bench.run" + (" --quick" if a.quick else "") + "".join(f" {n}" for n in a.names)
    t0 = time.time()
    for b in chosen:
        missing = b.missing()
        if missing:
            log(f"{b.module} skipped: {', '.join(missing)} not installed ({b.install})")
            continue
        t = time.time()
        run_module(b.module, arguments(b, quick=a.quick, me=me))
        log(f"{b.name}: {time.time() - t:.0f}s (expected about {60 * (b.quick_minutes if a.quick else b.minutes):.0f}s)")
    log(f"wrote {render_readme()} ({time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
