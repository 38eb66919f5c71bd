"""The triage report as one standalone HTML page: an inline SVG bar chart (share of each bucket
with its one-SE Wilson interval as the whisker), the headline figures, the bucket table (with its totals) and the cases,
each with its ranks and the chunks ranked above the gold. No scripts, no external assets."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from querywise.triage.buckets import BUCKETS, LABEL_BUCKETS, QUERY_BUCKETS, UNREACHABLE_BUCKETS, TriageCase
from querywise.triage.report import TriageReport
from querywise.triage.stats import half_up

__all__ = ["bucket_chart", "interval_text", "points_text", "triage_html"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 72em; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: right; vertical-align: top; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
.kpi { display: inline-block; margin-right: 2em; } .kpi b { font-size: 1.4em; display: block; }
small { color: #666; } ol.above { margin: 0; padding-left: 1.6em; font-size: 12px; } ol.above li { text-align: left; }
tr.total td, tr.total th { font-weight: bold; border-top: 2px solid #999; }
"""
_COLOURS = {"unreachable": "#c0504d", "routing": "#9bbb59", "ranking": "#f79646", "generation": "#8064a2", "label": "#9b9b9b", "query": "#4f81bd"}


def interval_text(report: TriageReport, bucket: str) -> str:
    """A bucket's Wilson interval in whole percents, by the report's rounding rule ("75–100%")."""
    lo, hi = report.intervals.get(bucket, [0.0, 1.0])
    return f"{half_up(100 * lo):.0f}–{half_up(100 * hi):.0f}%"


def points_text(v: float | None, places: int = 1) -> str:
    """Points of traffic by the report's rounding rule (whole numbers print whole)."""
    if v is None:
        return "–"
    return f"{v:g}" if float(v).is_integer() else f"{half_up(v, places):g}"


def _colour(bucket: str) -> str:
    if bucket in UNREACHABLE_BUCKETS:
        return _COLOURS["unreachable"]
    if bucket in QUERY_BUCKETS:
        return _COLOURS["query"]
    if bucket in LABEL_BUCKETS:
        return _COLOURS["label"]
    return _COLOURS[bucket]


def bucket_chart(report: TriageReport, *, href: Callable[[str], str] | None = None) -> str:
    """The share of each bucket with a one-SE whisker, as inline SVG; `href(bucket)` makes each
    row a link (the workbench's bucket filter)."""
    n = report.sample.n or 1
    row_h, label_w, bar_w = 24, 190, 420
    whiskers = {b: report.intervals.get(b) or [max(0.0, report.buckets[b] / n - report.se[b]), report.buckets[b] / n + report.se[b]] for b in BUCKETS}
    peak = max([whiskers[b][1] for b in BUCKETS if report.buckets[b]] + [0.05])
    parts = []
    for i, b in enumerate(BUCKETS):
        p = report.buckets[b] / n
        y = i * row_h + 4
        w = bar_w * p / peak
        lo, hi = label_w + bar_w * whiskers[b][0] / peak, label_w + bar_w * whiskers[b][1] / peak
        se = report.buckets[b] > 0
        row = (
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{escape(b)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" fill="{_colour(b)}"/>'
            + (f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="{y + row_h / 2}" y2="{y + row_h / 2}" stroke="#333"/>' if se else "")
            + f'<text x="{label_w + max(w, hi - label_w) + 6:.1f}" y="{y + 15}">{report.buckets[b]} '
            f"({report.shares[b]}%{', ' + interval_text(report, b) if se and report.intervals else ''})</text>"
        )
        parts.append(f'<a href="{escape(href(b))}" data-bucket="{escape(b)}">{row}</a>' if href is not None else row)
    legend = [
        ("not reachable: ingest, chunker", "unreachable"),
        ("routing", "routing"),
        ("ranking", "ranking"),
        ("generation", "generation"),
        ("suspect label", "label"),
        ("query layer", "query"),
    ]
    x = 0
    for text, key in legend:
        parts.append(f'<rect x="{x}" y="{len(BUCKETS) * row_h + 12}" width="12" height="12" fill="{_COLOURS[key]}"/>'
                     f'<text x="{x + 16}" y="{len(BUCKETS) * row_h + 22}">{escape(text)}</text>')
        x += 16 + 7 * len(text) + 24
    height = len(BUCKETS) * row_h + 32
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 140}" height="{height}" '
            f'font-size="12" role="img" aria-label="share of failures per bucket">{"".join(parts)}</svg>')


def _rank(value: int | None) -> str:
    return "–" if value is None else str(value)


def _above(c: TriageCase, k: int) -> str:
    """The chunks ranked above the gold for the original question, as a small list."""
    ev = c.evidence
    if not ev.above_original:
        return ""
    head = (f"top {len(ev.above_original)} (gold not in the top {k})" if ev.rank_original is None
            else f"{len(ev.above_original)} of {ev.rank_original - 1} above the gold")
    items = "".join(
        f'<li value="{a.rank}"><b>{escape(a.id)}</b> <small>({"same document" if a.same_doc else "other document"})</small> '
        f"{escape(a.snippet)}</li>" for a in ev.above_original)
    return f'<small>{escape(head)}</small><ol class="above">{items}</ol>'


def _se_text(report: TriageReport, bucket: str) -> str:
    """One SE in points; none for an empty or whole bucket, whose binomial SE is 0 and says nothing
    (the interval beside it does)."""
    count = report.buckets[bucket]
    return "–" if count in (0, report.sample.n) else f"{half_up(100 * report.se[bucket], 1):.1f}"


def _golds(c: TriageCase) -> str:
    """Each relevant document of a case with several, and its ranks."""
    golds = c.evidence.golds
    if len(golds) <= 1:
        return ""
    items = "".join(
        f"<li>{escape(g.id)}: "
        + ("not in the index" if not g.chunk_ids else f"rank {_rank(g.rank_original)} (question), {_rank(g.retrieved_rank)} (retrieved)")
        + "</li>"
        for g in golds
    )
    return f"<br><small>{len(golds)} relevant documents:</small><ol class='above'>{items}</ol>"


def findings(report: TriageReport) -> list[str]:
    """The report's statements beside the table: the depths' rule, ranking cases with a query-side
    cue, whether the two largest buckets differ, and the warnings."""
    out = [f"Depths: {report.sample.k_rule}"] if report.sample.k_rule else []
    rc = report.ranking_cues
    if rc is not None and rc.ranking:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(rc.by_kind.items()))
        out.append(
            f"Ranking cases with a query-side cue: {rc.with_cue} of {rc.ranking} ({half_up(100 * (rc.share or 0.0)):.0f}%"
            + (f": {kinds}" if kinds else "")
            + "), an upper bound on what the query layer adds among the ranking cases."
        )
    d = report.difference
    if d is not None and d.p_value is not None:
        out.append(
            f"{d.a} ({d.count_a}) against {d.b} ({d.count_b}) of {d.n}: "
            + ("they differ" if d.differ else "not shown to differ")
            + f" (z = {half_up(d.z or 0.0, 2):g}, p = {half_up(d.p_value, 3):g}; {d.test})."
        )
    if report.probes_not_built:
        out.append(f"Generated probe: none could be built for {report.probes_not_built} of {report.sample.n} cases (no main clause "
                   "to turn into a question, and no LLM writer): their generated rank is not measured, not made up.")
    out += [f"Warning: {w}" for w in report.warnings]
    return out


def triage_html(report: TriageReport, *, title: str = "Failure triage") -> str:
    """The report as a standalone page."""
    s = report.sample
    pop = s.population
    parts, part_pts = report.part_shares, report.part_points

    pts = points_text

    band = report.expected_band
    gain = "–" if band is None else (f"{pts(band[0])} points" if band[0] == band[1] else f"{pts(band[0])}–{pts(band[1])} points")
    kpis = [
        ("reachable share (query defects)", f"{parts.get('reachable', 0)}% ± {100 * report.reachable_se:.1f}"),
        ("reachable points (ceiling)", pts(report.reachable_points)),
        ("unreachable points", pts(report.unreachable_points)),
        ("failing points", pts(report.failing_whole)),
        ("suspect labels (not reachable)", f"{report.buckets.get('suspect_label', 0)} · {parts.get('suspect_label', 0)}%"
         + (f" · {part_pts['suspect_label']} points" if part_pts is not None else "")),
        ("expected band", gain),
    ]
    head = "".join(f'<div class="kpi"><b>{escape(v)}</b>{escape(k)}</div>' for k, v in kpis)
    popline = (
        f"{s.n} failures triaged"
        + (f" of {pop.failures}" if pop.failures is not None else "")
        + (
            f"; eval set {pop.eval_total} questions at {pop.acceptable_rate:.0%} acceptable, so {pts(s.failing_points, 2)} points of traffic fail"
            if pop.acceptable_rate is not None and s.failing_points is not None
            else ""
        )
        + f"; probes with k = {s.k}, mode {s.mode}; generation = the gold within the top {s.context_k} (--context-k); "
        f"depths: {s.k_rule or 'given'}; SE: {s.se_method}; intervals: {s.interval_method}."
    )
    sums = ""
    if report.reachable_points is not None and report.unreachable_points is not None and part_pts is not None:
        sums = (
            f"Reachable points {report.reachable_points} + unreachable points {report.unreachable_points} = "
            f"{report.reachable_points + report.unreachable_points} failing points (unreachable: {part_pts['suspect_label']} "
            f"of suspect labels + {part_pts['rest']} index side, chunker, routing, ranking and generation). "
        )
    rounding = s.rounding + (f" Failing points: {pts(s.failing_points, 2)} → {report.failing_whole}." if report.failing_whole is not None else "")
    rows = "".join(
        f'<tr><th class="l">{escape(b)}</th><td>{report.buckets[b]}</td><td>{report.shares[b]}%</td>'
        f"<td>{_se_text(report, b)}</td><td>{interval_text(report, b) if report.intervals else '–'}</td>"
        f'<td>{pts(report.points[b])}</td><td class="l">{escape(report.repair[b])}'
        + (f"<br><small>{escape(report.prices[b])}</small>" if b in report.prices else "") + "</td></tr>"
        for b in BUCKETS
    )
    rows += (
        f'<tr class="total"><th class="l">total</th><td>{s.n}</td><td>{sum(report.shares.values())}%</td><td></td><td></td>'
        f"<td>{pts(report.failing_whole)}</td><td></td></tr>"
    )
    table = (
        '<table><tr><th class="l">bucket</th><th>count</th><th>share</th><th>SE (points)</th><th>interval (one SE, Wilson)</th>'
        f'<th>points of traffic</th><th class="l">repaired in</th></tr>{rows}</table>'
    )
    extra = "".join(f"<li>{escape(t)}</li>" for t in findings(report))
    cases = "".join(
        f'<tr><td class="l">{escape(c.id)}</td><td class="l">{escape(c.bucket)}'
        + (f' <small>({c.evidence.label_source})</small>' if c.evidence.label_source else "")
        + f'</td><td class="l">{escape(c.question)}</td><td>{_rank(c.evidence.rank_original)}</td>'
        f"<td>{_rank(c.evidence.retrieved_rank)}</td><td>{_rank(c.evidence.literal_rank)}</td><td>{_rank(c.evidence.generated_rank)}</td>"
        f'<td class="l">{escape(c.evidence.reason)}{_golds(c)}</td><td class="l">{_above(c, s.k)}</td></tr>'
        for c in report.cases
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{escape(popline)}</p>{head}<h2>Where the failures are repaired</h2>{bucket_chart(report)}"
        f"{table}<p>{escape(sums + rounding)}</p><ul>{extra}</ul><ul>{notes}</ul><h2>Cases</h2><table><tr><th class='l'>id</th><th class='l'>bucket</th>"
        f"<th class='l'>question</th><th>rank (original)</th><th>rank (retrieved)</th><th>rank (literal)</th><th>rank (generated)</th>"
        f"<th class='l'>why</th><th class='l'>ranked above the gold (original question)</th></tr>{cases}</table></body></html>"
    )
