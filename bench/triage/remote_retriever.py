"""Triage through the user's retriever (#16): SciFact failures triaged through the querywise index
and through the same index served behind the HTTP retriever on 127.0.0.1 must give the same buckets;
the same for an eval -> triage round trip through that retriever with the passages alone.

    .venv/bin/python -m bench.triage.remote_retriever

Index: bench/work/first_contact/scifact-index (bench/triage/first_contact.py builds it). Failures: test
queries with no relevant document in the dense top 10 (hit@10, judged per document); triage at
k = 50, dense.
Writes bench/results/triage_retriever.json and .md (counts and agreement only, no data-set text).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import WORK, datasets, log
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.triage.remote_retriever"


def serve(index: Any) -> ThreadingHTTPServer:
    """The index over the HTTP retriever's default protocol, on 127.0.0.1 (a stand-in for the user's service)."""
    from querywise.conditions import Where

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            where = Where.model_validate(body["filters"]) if body.get("filters") else None
            hits = index.search(body["query"], k=body["k"], where=where, mode=body.get("mode", "hybrid"))
            raw = json.dumps({"hits": [{"id": h.id, "score": h.score, "text": h.text, "payload": h.payload} for h in hits]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    from bench.triage.verb import ChunkTable, TriageOptions, TriageTarget, probe_cases
    from querywise.config import RetrieverSettings, Settings
    from querywise.evaluation.acceptable import parse_rule
    from querywise.evaluation.failures import failure_rows
    from querywise.evaluation.harness import Arm, JudgedIds, run_arm
    from querywise.evaluation.metrics import parse_metrics
    from querywise.index import Index
    from querywise.retrieve import HTTPRetriever
    from querywise.service import QueryWise

    settings = Settings()
    _, cases = datasets.scifact("test")
    with Index.open(WORK / "first_contact" / "scifact-index", settings=settings) as ix:
        server = serve(ix)
        remote = HTTPRetriever(RetrieverSettings(kind="http", url=f"http://127.0.0.1:{server.server_address[1]}/search"))
        try:
            # eval through each retriever (as typed, dense), its failure rows: hit@10 judged per document
            metrics, rule = parse_metrics(["hit@10"]), parse_rule(["hit@10"])
            judged = JudgedIds.of_chunks(ix.chunks())  # the passages: what `eval --corpus` judges by without an index
            rows = {}
            with QueryWise(settings, ix) as local, QueryWise(settings, None, embedder=ix.embedder, retriever=remote) as served:
                for name, qw in (("index", local), ("http", served)):
                    run = run_arm(cases, qw, Arm(name=name, mode="dense"), metrics, keep_ids=None, judged=judged)
                    rows[name] = failure_rows(list(cases), run.cases, ix.chunks(), rule).rows
            failing = {name: [r for r in rs if not r.acceptable] for name, rs in rows.items()}
            failures, n = failing["index"], len(cases)
            table = ChunkTable.of(ix.chunks())
            log(f"{len(failures)} failing of {n}; triaging through the index, then through HTTP")
            dense = TriageOptions(k=50, mode="dense")
            mine = probe_cases(failures, TriageTarget(index=ix, table=table), dense)
            theirs = probe_cases(failures, TriageTarget(index=ix, retriever=remote, table=table), dense)
            alone = probe_cases(failures, TriageTarget(retriever=remote, embedder=ix.embedder, table=table), dense)
            trip_http = probe_cases(failing["http"], TriageTarget(retriever=remote, embedder=ix.embedder, table=table), dense)
        finally:
            server.shutdown()
            server.server_close()

    def buckets(cs: Any) -> dict[str, int]:
        return dict(sorted(Counter(c.bucket for c in cs).items()))

    result: dict[str, Any] = {
        "failures": len(failures), "queries": n,
        "buckets": {"index": buckets(mine), "http (index's table)": buckets(theirs), "http (passages alone)": buckets(alone)},
        "identical_cases": {"http (index's table)": [c.bucket for c in theirs] == [c.bucket for c in mine],
                            "http (passages alone)": [c.bucket for c in alone] == [c.bucket for c in mine]},
        "round_trip": {"failure_rows_identical": rows["index"] == rows["http"], "failing": len(failing["index"]),
                       "buckets_index": buckets(mine), "buckets_http": buckets(trip_http),
                       "identical_cases": [c.bucket for c in trip_http] == [c.bucket for c in mine]},
    }
    path = publish("triage_retriever", result, command=COMMAND, render=markdown)
    log(path.with_suffix(".md").read_text(encoding="utf-8"))


def markdown(result: dict[str, Any]) -> str:
    """triage_retriever.md from triage_retriever.json."""
    lines = ["# Triage through the user's retriever: the same buckets", "", f"Command: `{result['machine']['command']}`.", "",
             f"SciFact test, {result['failures']} failures of {result['queries']} queries (no relevant document in the dense top 10, `eval` through the index), triaged at k = 50, dense: "
             "through the querywise index; through the same index behind the HTTP retriever on 127.0.0.1 (the chunk table from the index, "
             "and from the passages alone, as `--corpus` gives it). Then the round trip: `eval` through each, its failure rows, `triage`.", "",
             "| probed through | " + " | ".join(sorted(result["buckets"]["index"])) + " | same bucket, every case |",
             "|---|" + "---|" * (len(result["buckets"]["index"]) + 1)]
    for name, b in result["buckets"].items():
        same = "—" if name == "index" else ("yes" if result["identical_cases"][name] else "no")
        lines.append(f"| {name} | " + " | ".join(str(b.get(k, 0)) for k in sorted(result["buckets"]["index"])) + f" | {same} |")
    rt = result["round_trip"]
    lines += ["", f"Round trip: failure rows identical: {rt['failure_rows_identical']}; {rt['failing']} failing; buckets through the index "
              f"{rt['buckets_index']}, through HTTP with the passages alone {rt['buckets_http']}; every case the same bucket: {rt['identical_cases']}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
