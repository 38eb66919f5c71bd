"""A small triage report (three cases: a suggested query defect, a ranking case, an unlabelled
one) for the tests of labels and of the workbench."""

from __future__ import annotations

from querywise.triage import Evidence, Location, Population, TriageCase, TriageOptions, build_report
from querywise.triage.detectors import QueryCheck


def small_report() -> dict[str, object]:
    loc = Location(method="chunk_id", chunk_id="c1", chunk_ids=["c1"])
    cases = [
        TriageCase(id="q1", question="the cooling-off period?", bucket="vocabulary",
             evidence=Evidence(location=loc, query=QueryCheck(suggested="vocabulary", fired=["vocabulary"], cues=["vocabulary: 0%"]),
                               label_source="suggested", reason="vocabulary: 0%")),
        TriageCase(id="q2", question="how do I reset them?", bucket="ranking", evidence=Evidence(location=loc, rank_original=8, reason="rank 8")),
        TriageCase(id="q3", question="and the Pro?", bucket="unlabelled_query_defect", evidence=Evidence(location=loc)),
    ]
    return build_report(cases, Population(failures=3), TriageOptions(k=10, context_k=5, mode="hybrid")).to_json()
