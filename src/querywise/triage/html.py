"""The triage report as one standalone HTML page: an inline SVG bar chart (share of each bucket
with a one-SE whisker), the headline figures, the bucket table and the cases. No scripts, no
external assets."""

from __future__ import annotations

from html import escape

from querywise.triage.buckets import BUCKETS, QUERY_BUCKETS, UNREACHABLE_BUCKETS
from querywise.triage.report import TriageReport

__all__ = ["triage_html"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 72em; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: right; vertical-align: top; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.kpi { display: inline-block; margin-right: 2em; } .kpi b { font-size: 1.4em; display: block; }
small { color: #666; }
"""
_COLOURS = {"unreachable": "#c0504d", "ranking": "#f79646", "generation": "#8064a2", "query": "#4f81bd"}


def _colour(bucket: str) -> str:
    if bucket in UNREACHABLE_BUCKETS:
        return _COLOURS["unreachable"]
    if bucket in QUERY_BUCKETS:
        return _COLOURS["query"]
    return _COLOURS[bucket]


def _chart(report: TriageReport) -> str:
    n = report.sample.n or 1
    row_h, label_w, bar_w = 24, 190, 420
    peak = max([report.buckets[b] / n + report.se[b] for b in BUCKETS] + [0.05])
    parts = []
    for i, b in enumerate(BUCKETS):
        p, se = report.buckets[b] / n, report.se[b]
        y = i * row_h + 4
        w = bar_w * p / peak
        lo, hi = label_w + bar_w * max(0.0, p - se) / peak, label_w + bar_w * (p + se) / peak
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{escape(b)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" fill="{_colour(b)}"/>'
            + (f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="{y + row_h / 2}" y2="{y + row_h / 2}" stroke="#333"/>' if se else "")
            + f'<text x="{label_w + max(w, hi - label_w) + 6:.1f}" y="{y + 15}">{report.buckets[b]} '
            f'({report.shares[b]}% ± {100 * se:.1f})</text>'
        )
    legend = [("not reachable: ingest, chunker", "unreachable"), ("ranking", "ranking"), ("generation", "generation"),
              ("query layer", "query")]
    x = 0
    for text, key in legend:
        parts.append(f'<rect x="{x}" y="{len(BUCKETS) * row_h + 12}" width="12" height="12" fill="{_COLOURS[key]}"/>'
                     f'<text x="{x + 16}" y="{len(BUCKETS) * row_h + 22}">{escape(text)}</text>')
        x += 16 + 7 * len(text) + 24
    height = len(BUCKETS) * row_h + 32
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 140}" height="{height}" '
            f'font-size="12" role="img" aria-label="share of failures per bucket">{"".join(parts)}</svg>')


def triage_html(report: TriageReport, *, title: str = "Failure triage") -> str:
    """The report as a standalone page."""
    s = report.sample
    pop = s.population

    def pts(v: float | None) -> str:
        return "–" if v is None else f"{v:g}"

    kpis = [
        ("reachable share (query defects)", f"{report.reachable_share:.0%} ± {100 * report.reachable_se:.1f}"),
        ("reachable points (ceiling)", pts(report.reachable_points)),
        ("unreachable points", pts(report.unreachable_points)),
        ("expected band", "–" if report.expected_band is None else f"{pts(report.expected_band[0])}–{pts(report.expected_band[1])} points"),
    ]
    head = "".join(f'<div class="kpi"><b>{escape(v)}</b>{escape(k)}</div>' for k, v in kpis)
    popline = (f"{s.n} failures triaged" + (f" of {pop.failures}" if pop.failures is not None else "")
               + (f"; eval set {pop.eval_total} questions at {pop.acceptable_rate:.0%} acceptable, "
                  f"so {s.failing_points:g} points of traffic fail" if pop.acceptable_rate is not None and s.failing_points is not None else "")
               + f"; probes with k = {s.k}, mode {s.mode}; SE: {s.se_method}.")
    rows = "".join(
        f'<tr><th class="l">{escape(b)}</th><td>{report.buckets[b]}</td><td>{report.shares[b]}%</td>'
        f'<td>{100 * report.se[b]:.1f}</td><td>{pts(report.points[b])}</td><td class="l">{escape(report.repair[b])}</td></tr>'
        for b in BUCKETS
    )
    table = ('<table><tr><th class="l">bucket</th><th>count</th><th>share</th><th>SE (points)</th>'
             f'<th>points of traffic</th><th class="l">repaired in</th></tr>{rows}</table>')
    cases = "".join(
        f'<tr><td class="l">{escape(c.id)}</td><td class="l">{escape(c.bucket)}'
        + (f' <small>({c.evidence.label_source})</small>' if c.evidence.label_source else "")
        + f'</td><td class="l">{escape(c.question)}</td><td>{c.evidence.rank_original or "–"}</td>'
        f'<td>{c.evidence.literal_rank or "–"}</td><td>{c.evidence.generated_rank or "–"}</td>'
        f'<td class="l">{escape(c.evidence.reason)}</td></tr>'
        for c in report.cases
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{escape(popline)}</p>{head}<h2>Where the failures are repaired</h2>{_chart(report)}"
        f"{table}<ul>{notes}</ul><h2>Cases</h2><table><tr><th class='l'>id</th><th class='l'>bucket</th>"
        f"<th class='l'>question</th><th>rank (original)</th><th>rank (literal)</th><th>rank (generated)</th>"
        f"<th class='l'>why</th></tr>{cases}</table></body></html>"
    )
