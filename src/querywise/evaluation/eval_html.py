"""The evaluation report as one standalone HTML file: inline SVG charts, no scripts, no CDN.

Charts: metric bars per slice, ablation deltas with their 95% intervals (one small panel per
slice, one row per arm), and the router confusion heat map. Formatting only: every number
comes from the `EvalReport`.
"""

from __future__ import annotations

from html import escape

from querywise.evaluation.ablation import AblationReport
from querywise.evaluation.components import ComponentReport, RouterScores
from querywise.evaluation.harness import ALL, ArmResult
from querywise.evaluation.report import EvalReport

__all__ = ["eval_report_html"]

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, sans-serif; margin: 24px 32px; color: #1f2328; max-width: 1200px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #59636e; margin: 0 0 12px; }
.kpis { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.kpi { border: 1px solid #d1d9e0; border-radius: 6px; padding: 6px 12px; min-width: 96px; }
.kpi b { display: block; font-size: 20px; } .kpi span { color: #59636e; font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 13px; }
td, th { border: 1px solid #d1d9e0; padding: 3px 8px; text-align: right; } th { background: #f6f8fa; }
td.l, th.l { text-align: left; }
.row { display: flex; gap: 28px; align-items: flex-start; flex-wrap: wrap; }
.grid { display: grid; grid-template-columns: repeat(3, 1fr); gap: 6px 18px; }
.flag { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 6px 10px; margin: 6px 0; }
.note { color: #59636e; font-size: 12px; }
.ok { color: #1a7f37; font-weight: 600; } .bad { color: #cf222e; font-weight: 600; }
svg text { font: 11px system-ui, sans-serif; fill: #1f2328; }
"""
_COLOURS = ("#0969da", "#8250df", "#1a7f37", "#bc4c00", "#6e7781")


def _f(v: float | None, pct: bool = False) -> str:
    return "–" if v is None else (f"{v:.1%}" if pct else f"{v:.3f}")


def _slice_bars(run: ArmResult) -> str:
    """Horizontal bars: one group per slice, one bar per metric (the first three)."""
    metrics = run.metrics[:3]  # the rest are in the table beside the chart
    values = {ALL: run.overall, **run.slices}
    names = [n for n in (ALL, *run.slices) if any(m in values[n] for m in metrics)]  # slices with scores
    label_w, bar_w, bar_h, gap = 150, 330, 9, 7
    group_h = bar_h * len(metrics) + gap
    height = group_h * len(names) + 30
    parts = [f'<svg width="{label_w + bar_w + 70}" height="{height}" role="img" aria-label="metrics per slice">']
    for i, m in enumerate(metrics):
        x = label_w + i * 110
        parts.append(f'<rect x="{x}" y="2" width="10" height="10" fill="{_COLOURS[i]}"/><text x="{x + 14}" y="11">{escape(m)}</text>')
    for gi, name in enumerate(names):
        y0 = 24 + gi * group_h
        size = run.n if name == ALL else run.slice_sizes.get(name, 0)
        parts.append(f'<text x="{label_w - 8}" y="{y0 + group_h / 2}" text-anchor="end">{escape(name)} (n={size})</text>')
        for i, m in enumerate(metrics):
            v = values[name].get(m)
            if v is None:
                continue
            y = y0 + i * bar_h
            parts.append(f'<rect x="{label_w}" y="{y}" width="{bar_w * v:.1f}" height="{bar_h - 2}" fill="{_COLOURS[i]}"/>')
            parts.append(f'<text x="{label_w + bar_w * v + 4:.1f}" y="{y + bar_h - 3}">{v:.3f}</text>')
    parts.append(f'<line x1="{label_w}" y1="20" x2="{label_w}" y2="{height}" stroke="#999"/></svg>')
    return "".join(parts)


def _forest(ab: AblationReport, metric: str) -> str:
    """One panel per slice: each arm's delta against the baseline with its interval."""
    arms = [a.arm.name for a in ab.arms[1:]]
    slices = [ALL, *sorted({d.slice for d in ab.deltas if d.slice != ALL})]
    rows = {(d.arm, d.slice): d.diff for d in ab.deltas if d.metric == metric}
    # The scale follows the slices with at least 10 cases; a tiny slice's wide interval is clipped.
    sized = [x for x in rows.values() if x.n >= 10] or list(rows.values())
    span = max([0.05, *(max(abs(x.low), abs(x.high)) for x in sized)])
    label_w, plot_w, row_h = 86, 250, 15
    panels = []
    for s in slices:
        h = 30 + row_h * len(arms)
        p = [f'<svg width="{label_w + plot_w + 10}" height="{h}" role="img" aria-label="deltas on {escape(s)}">',
             f'<text x="{label_w}" y="12" font-weight="600">{escape(s)}</text>']
        zero = label_w + plot_w / 2
        p.append(f'<line x1="{zero}" y1="18" x2="{zero}" y2="{h - 4}" stroke="#999" stroke-dasharray="3,3"/>')
        for i, arm in enumerate(arms):
            y = 28 + i * row_h
            p.append(f'<text x="{label_w - 6}" y="{y + 4}" text-anchor="end">{escape(arm)}</text>')
            d = rows.get((arm, s))
            if d is None:
                continue

            def x(v: float, zero: float = zero) -> float:
                return zero + max(-1.0, min(1.0, v / span)) * (plot_w / 2 - 6)

            colour = "#1a7f37" if d.direction > 0 else "#cf222e" if d.direction < 0 else "#6e7781"
            p.append(f'<line x1="{x(d.low):.1f}" y1="{y}" x2="{x(d.high):.1f}" y2="{y}" stroke="{colour}" stroke-width="2"/>')
            p.append(f'<circle cx="{x(d.delta):.1f}" cy="{y}" r="3.5" fill="{colour}"><title>{escape(arm)} on {escape(s)}: '
                     f'{d.delta:+.3f} [{d.low:+.3f}, {d.high:+.3f}], p={d.p_value:.3f}, n={d.n}</title></circle>')
        p.append("</svg>")
        panels.append("".join(p))
    axis = f'<p class="note">Each panel spans {-span:+.2f} … {span:+.2f} ({escape(metric)} minus {escape(ab.baseline)}); green/red: the 95% interval excludes 0 and p &lt; 0.05.</p>'
    return axis + f'<div class="grid">{"".join(panels)}</div>'


def _heatmap(r: RouterScores) -> str:
    cell, label_w, top = 44, 130, 100
    w, h = label_w + cell * len(r.labels) + 10, top + cell * len(r.rows) + 10
    peak = max([1, *(v for row in r.matrix for v in row)])
    p = [f'<svg width="{w}" height="{h}" role="img" aria-label="router confusion">']
    for j, c in enumerate(r.labels):
        x = label_w + j * cell + cell / 2
        p.append(f'<text transform="translate({x},{top - 6}) rotate(-40)">{escape(c)}</text>')
    for i, g in enumerate(r.rows):
        y = top + i * cell
        p.append(f'<text x="{label_w - 6}" y="{y + cell / 2 + 4}" text-anchor="end">{escape(g)}</text>')
        for j, c in enumerate(r.labels):
            v = r.matrix[i][j] if j < len(r.matrix[i]) else 0
            a = 0.9 * v / peak
            fill = f"rgba(9,105,218,{a:.2f})" if g == c else f"rgba(207,34,46,{a:.2f})"
            p.append(f'<rect x="{label_w + j * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{fill}" stroke="#d1d9e0"/>')
            if v:
                p.append(f'<text x="{label_w + j * cell + cell / 2 - 1}" y="{y + cell / 2 + 4}" text-anchor="middle">{v}</text>')
    p.append("</svg>")
    return "".join(p) + '<p class="note">Rows: expected route; columns: the route the plan took (after any fallback).</p>'


def _components(c: ComponentReport) -> str:
    rows = [
        ("router fallback rate", _f(c.fallback_rate, True)),
        ("clarification rate (plans that ask)", _f(c.clarification_rate, True)),
        ("standalone messages searched as typed", _f(c.standalone_untouched, True)),
        (f"rewrite-guard failures ({c.n_follow_ups_flagged} follow-ups flagged)", _f(c.guard_failure_rate, True)),
    ]
    if c.router:
        rows.append((f"route accuracy ({c.router.n} labelled)", _f(c.router.accuracy, True)))
    if c.ambiguity:
        a = c.ambiguity
        rows += [(f"asked when it should ({a.should_ask} of {a.n} labelled)", _f(a.asked_when_should, True)),
                 ("missed when it should", _f(a.missed_when_should, True)),
                 ("asked when it should not", _f(a.asked_when_should_not, True))]
    if c.filters:
        rows.append((f"filters exact match ({c.filters.n} labelled)", _f(c.filters.exact_match, True)))
        rows += [(f"&nbsp;&nbsp;field {escape(f)} (n={s.n})", _f(s.exact, True)) for f, s in c.filters.per_field.items()]
    if c.access:
        cls = "ok" if c.access.violations == 0 else "bad"
        rows.append((f"access violations ({c.access.n_probes} adversarial plans, {c.access.n_hits_checked} hits checked)",
                     f'<span class="{cls}">{c.access.violations}</span>'))
    body = "".join(f'<tr><td class="l">{k}</td><td>{v}</td></tr>' for k, v in rows)
    out = f"<table><tr><th class='l'>component</th><th>value</th></tr>{body}</table>"
    if c.router:
        pr = "".join(f'<tr><td class="l">{escape(r)}</td><td>{_f(m.precision)}</td><td>{_f(m.recall)}</td><td>{m.support}</td></tr>'
                     for r, m in c.router.per_route.items())
        out += f"<table><tr><th class='l'>route</th><th>precision</th><th>recall</th><th>support</th></tr>{pr}</table>"
    if c.access and c.access.note:
        out += f'<p class="note">{escape(c.access.note)}</p>'
    return out


def _metric_table(run: ArmResult) -> str:
    head = "".join(f"<th>{escape(m)}</th>" for m in run.metrics) + "<th>zero results</th>"
    rows = []
    for name, vals, n in [(ALL, run.overall, run.n), *((s, run.slices[s], run.slice_sizes[s]) for s in run.slices)]:
        cells = "".join(f"<td>{_f(vals.get(m))}</td>" for m in run.metrics)
        rows.append(f'<tr><td class="l">{escape(name)}</td><td>{n}</td>{cells}<td>{_f(vals.get("zero_result_rate"), True)}</td></tr>')
    return f"<table><tr><th class='l'>slice</th><th>n</th>{head}</tr>{''.join(rows)}</table>"


def _ablation_table(ab: AblationReport, metric: str) -> str:
    head = "<tr><th class='l'>arm</th><th class='l'>mode</th><th class='l'>moves</th>" + f"<th>{escape(metric)}</th><th>Δ all [95% CI]</th><th>p50 ms</th></tr>"
    rows = []
    for a in ab.arms:
        d = next((d.diff for d in ab.deltas if d.arm == a.arm.name and d.slice == ALL and d.metric == metric), None)
        delta = "baseline" if d is None else f"{d.delta:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"
        rows.append(f'<tr><td class="l">{escape(a.arm.name)}</td><td class="l">{a.arm.mode}</td><td class="l">{escape(", ".join(a.arm.moves) or "none")}</td>'
                    f"<td>{_f(a.overall.get(metric))}</td><td>{delta}</td><td>{a.latency_ms['p50']:.1f}</td></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def eval_report_html(report: EvalReport, *, title: str = "querywise evaluation") -> str:
    """The whole report as one HTML document."""
    run = report.run
    kpis = [(m, _f(run.overall.get(m))) for m in run.metrics[:5]]
    kpis += [("zero results", _f(run.zero_result_rate, True)), ("latency p50 / p95 ms", f"{run.latency_ms['p50']:.1f} / {run.latency_ms['p95']:.1f}")]
    kpis.append(("LLM calls / 1k msgs", "none" if run.llm_calls_per_1000 is None else f"{run.llm_calls_per_1000:g}"))
    kpi_html = "".join(f'<div class="kpi"><b>{v}</b><span>{escape(k)}</span></div>' for k, v in kpis)
    moves = ", ".join(run.arm.moves) or "none (pass-through)"
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1><p class='sub'>{escape(report.source)} · {run.n} cases · mode {run.arm.mode} · moves {escape(moves)}</p>",
        f'<div class="kpis">{kpi_html}</div>',
        f'<h2>Retrieval per slice</h2><div class="row"><div>{_slice_bars(run)}</div><div>{_metric_table(run)}</div></div>',
    ]
    c = report.components
    if c is not None:
        heat = f"<div><h3>Router confusion</h3>{_heatmap(c.router)}</div>" if c.router else ""
        parts += ["<h2>Components</h2>", f'<div class="row"><div>{_components(c)}</div>{heat}</div>']
    ab = report.ablation
    if ab is not None and len(ab.arms) > 1:
        metric = run.metrics[0]
        parts += [f"<h2>Ablation against {escape(ab.baseline)}: {escape(metric)}</h2>",
                  (f'<p class="note">Paired bootstrap over cases ({ab.resamples} resamples, seed {ab.seed}) for the interval; '
                   "sign-flip permutation test for p.</p>"), _forest(ab, metric), _ablation_table(ab, metric)]
        parts += [f'<div class="flag">⚑ {escape(f)}</div>' for f in ab.flags]
        if ab.skipped:
            parts.append('<p class="note">Not run: ' + "; ".join(f"{escape(k)} ({escape(v)})" for k, v in ab.skipped.items()) + "</p>")
    parts.append("</body></html>")
    return "".join(parts)
