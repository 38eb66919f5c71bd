"""A new user's first contact with real data, through the CLI only: index → eval --failures → triage.

    python -m bench.triage.first_contact            # both collections (~15 min on 2 cores, embeddings cached after)
    python -m bench.triage.first_contact --only faq # one of them

Two public collections from ../shared/data, each in BEIR form, run exactly as the README tells a
user to (the commands are recorded with the results):

- `faq`: a help centre searched FAQ-style. The 273 doc2dial documents (long pages: `index` cuts
  them into chunks; the record id is the document id) and the dialogue openers as questions, judged
  by their document. Failure means "the right page is not the first result" (`--acceptable-if
  hit@1`), as in a FAQ box that shows one answer.
- `scifact`: SciFact's BEIR folder as shipped (5,183 abstracts, 300 test claims), failure = no
  relevant abstract in the top 5 (the default `hit@5`).

Each failures file is triaged twice, with `--context-k 1` (the generator or UI shows one result)
and `--context-k 10` (it shows ten): a gold ranked 2..10 is a *generation* failure in the second
run and a *ranking* failure in the first, so the generation share must grow with the cut-off.

The BEIR folder for `faq` is written under bench/work/ at run time; committed results hold ids
(hashed where they are data-set text), buckets, ranks and figures, never questions or passages.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import RESULTS, ROOT, WORK, datasets, log
from bench.report import write_json

CONTEXT_KS = (1, 10)


def _pseudo(value: str) -> str:
    return value if value.isdigit() else "h" + hashlib.sha1(value.encode()).hexdigest()[:10]


def _cli(args: list[str], shown: list[str]) -> tuple[str, float]:
    """Run `querywise ARGS` as a user would; return stdout and seconds. `shown` is the command as
    recorded (paths relative to the repository)."""
    log("$ querywise " + " ".join(shown))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "querywise", *args], cwd=ROOT, capture_output=True, text=True)
    seconds = round(time.perf_counter() - t0, 1)
    if done.returncode != 0:
        raise SystemExit(f"querywise {' '.join(shown)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    for line in done.stderr.splitlines()[-12:]:
        log("  " + line)
    return done.stdout, seconds


def _triage_summary(report: dict[str, Any]) -> dict[str, Any]:
    """The report's figures, and per case only ids (hashed), bucket and ranks: no data-set text."""
    keep = {k: v for k, v in report.items() if k not in ("cases",)}
    cases = []
    for c in report.get("cases", []):
        ev = c.get("evidence", {})
        cases.append({"id": _pseudo(str(c["id"])), "bucket": c["bucket"], "rank_original": ev.get("rank_original"),
                      "retrieved_rank": ev.get("retrieved_rank"), "literal_rank": ev.get("literal_rank"),
                      "generated_rank": ev.get("generated_rank")})
    keep["cases"] = cases
    return keep


def run(name: str, folder: Path, shown_folder: str, acceptable_if: str, mode: str) -> dict[str, Any]:
    work = WORK / "first_contact"
    index, failures = work / f"{name}-index", work / f"{name}-failures.jsonl"
    rel = lambda p: str(Path(p).relative_to(ROOT)) if Path(p).is_relative_to(ROOT) else str(p)  # noqa: E731
    steps: dict[str, Any] = {}
    _, steps["index_s"] = _cli(["index", str(folder), "--index", str(index), "--skip-invalid"],
                               ["index", shown_folder, "--index", rel(index), "--skip-invalid"])
    eval_args = ["eval", str(folder), "--index", str(index), "--mode", mode, "--failures", str(failures),
                 "--acceptable-if", acceptable_if, "--json"]
    stdout, steps["eval_s"] = _cli(eval_args, ["eval", shown_folder, "--index", rel(index), "--mode", mode, "--failures",
                                               rel(failures), "--acceptable-if", f'"{acceptable_if}"', "--json"])
    ev = json.loads(stdout)
    rows = [json.loads(line) for line in failures.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict[str, Any] = {
        "eval_overall": ev.get("arms", [{}])[0].get("overall") if isinstance(ev.get("arms"), list) else ev.get("overall"),
        "acceptable_if": acceptable_if, "mode": mode, "n_cases": len(rows),
        "n_acceptable": sum(1 for r in rows if r.get("acceptable")), "steps_s": steps, "triage": {},
    }
    for ck in CONTEXT_KS:
        args = ["triage", str(failures), "--index", str(index), "--mode", mode, "--context-k", str(ck), "--json"]
        stdout, secs = _cli(args, ["triage", rel(failures), "--index", rel(index), "--mode", mode, "--context-k", str(ck), "--json"])
        out["triage"][f"context_k={ck}"] = {"seconds": secs, **_triage_summary(json.loads(stdout))}
    return out


def _markdown(name: str, about: str, data: dict[str, Any], commands: list[str]) -> None:
    lines = [f"# First contact: {name}", "", about, "", "Commands (a user's whole journey):", "", "```",
             *commands, "```", "",
             f"{data['n_cases']} questions, {data['n_acceptable']} acceptable by `{data['acceptable_if']}`, "
             f"{data['n_cases'] - data['n_acceptable']} failing; mode {data['mode']}. "
             f"Steps: {data['steps_s']}.", ""]
    for key, rep in data["triage"].items():
        buckets, shares, points = rep.get("buckets", {}), rep.get("shares", {}), rep.get("points", {})
        lines += [f"## triage, {key}", "", "| bucket | count | share % | points of traffic |", "|---|---|---|---|"]
        for b, n in buckets.items():
            lines.append(f"| {b} | {n} | {shares.get(b, '')} | {points.get(b, '')} |")
        lines += ["", f"reachable share: {rep.get('reachable_share')}; reachable points {rep.get('reachable_points')}, "
                  f"unreachable points {rep.get('unreachable_points')}; {rep['seconds']} s", ""]
    (RESULTS / f"first_contact_{name}.md").write_text("\n".join(lines), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("faq", "scifact"))
    a = ap.parse_args()
    runs = {
        "faq": (datasets.doc2dial_faq_folder, "bench/work/first_contact/faq-beir", "hit@1", "hybrid",
                "doc2dial's 273 help-centre documents (cut into chunks at index time) and its 660 dialogue openers, "
                "judged by document; failure = the right document is not first (`hit@1`)."),
        "scifact": (lambda: datasets.SCIFACT, "../shared/data/scifact", "hit@5", "hybrid",
                    "SciFact (BEIR folder as shipped), 300 test claims; failure = no relevant abstract in the top 5 (`hit@5`)."),
    }
    for name, (folder, shown, rule, mode, about) in runs.items():
        if a.only and name != a.only:
            continue
        data = run(name, folder(), shown, rule, mode)
        commands = [f"querywise index {shown} --index bench/work/first_contact/{name}-index --skip-invalid",
                    f"querywise eval {shown} --index bench/work/first_contact/{name}-index --mode {mode} "
                    f"--failures bench/work/first_contact/{name}-failures.jsonl --acceptable-if {rule}",
                    *(f"querywise triage bench/work/first_contact/{name}-failures.jsonl --index bench/work/first_contact/{name}-index "
                      f"--mode {mode} --context-k {ck}" for ck in CONTEXT_KS)]
        write_json(f"first_contact_{name}.json", {"about": about, "commands": commands, **data},
                   command=f"python -m bench.triage.first_contact --only {name}")
        _markdown(name, about, data, commands)


if __name__ == "__main__":
    main()
