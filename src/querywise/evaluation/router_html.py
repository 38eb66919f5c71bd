"""The router report (`querywise router-eval --html`) as one standalone HTML file: no scripts, no external assets."""

from __future__ import annotations

from html import escape

from querywise.evaluation.router import RouterReport

__all__ = ["router_report_html"]

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ddd; padding: 4px 8px; text-align: right; }
th { background: #f4f4f4; } th.row { text-align: left; }
.kpi { display: inline-block; margin-right: 2em; } .kpi b { font-size: 1.4em; display: block; }
.warn { color: #a15c00; font-weight: bold; }
"""


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1%}"  # no denominator: no figure, never a 0%


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _choice(report: RouterReport) -> str:
    """The operating point, every candidate's validation figures, the reason for the choice and any warning."""
    rows = "".join(
        f'<tr><th class="row">{escape(c.classifier)}{" (chosen)" if c.classifier == report.classifier else ""}</th>'
        f"<td>{c.min_margin:.4f}</td><td>{'off' if c.min_in_scope is None else f'{c.min_in_scope:.4f}'}</td>"
        + "".join(f"<td>{_pct(v)}</td>" for v in (c.val.in_scope_accuracy, c.val.answered_accuracy, c.val.deferred_share, c.val.oos_recall, c.val.oos_precision))
        + f"<td>{'yes' if c.meets_operating_point else 'no'}</td></tr>"
        for c in report.candidates
        if c.val is not None
    )
    table = (
        "<table><tr><th>classifier</th><th>min_margin</th><th>min_in_scope</th><th>in-scope acc</th><th>answered acc</th>"
        f"<th>deferred</th><th>OOS recall</th><th>OOS precision</th><th>meets</th></tr>{rows}</table>"
        if rows else ""
    )
    warnings = "".join(f'<p class="warn">warning: {escape(w)}</p>' for w in report.warnings)
    chosen = next((c for c in report.candidates if c.classifier == report.classifier), None)
    near = "".join(
        f"<tr><th class=\"row\">{escape(t.what)}</th><td>{_pct(t.answered_accuracy)}</td><td>{_pct(t.deferred_share)}</td>"
        f"<td>{_pct(t.oos_recall)}</td><td>{t.min_margin:.4f}</td><td>{'off' if t.min_in_scope is None else f'{t.min_in_scope:.4f}'}</td></tr>"
        for t in (chosen.tradeoffs if chosen is not None else [])
    )
    tradeoffs = ("<p>The operating point is out of reach on val; the nearest points:</p><table><tr><th>point</th><th>answered acc</th>"
                 f"<th>deferred</th><th>OOS recall</th><th>min_margin</th><th>min_in_scope</th></tr>{near}</table>") if near else ""
    return (
        f"<h2>Operating point and choice</h2><p>{escape(report.operating_point.description)}</p>"
        f"{table}<p>{escape(report.choice)}</p>{warnings}{tradeoffs}"
    )


def router_report_html(report: RouterReport, *, title: str = "Router evaluation") -> str:
    """The headline figures, the operating point and the classifier choice (every candidate's validation
    figures), a confusion heat map (gold rows x predicted columns) and per-route table; a figure
    without a denominator reads "n/a"."""
    kpis = [
        ("in-scope accuracy", report.in_scope_accuracy),
        ("answered accuracy", report.answered_accuracy),
        ("deferred", report.deferred_share),
        ("OOS recall", report.oos_recall),
        ("OOS precision", report.oos_precision),
    ]
    head = "".join(f'<div class="kpi"><b>{_pct(v)}</b>{escape(k)}</div>' for k, v in kpis)
    cols = report.labels
    rows = cols[: len(report.matrix)]
    peak = max((max(r) for r in report.matrix), default=1) or 1
    cells = []
    for name, row in zip(rows, report.matrix, strict=True):
        tds = []
        for col, count in zip(cols, row, strict=True):
            shade = 0.85 * count / peak
            color = f"rgba(30,110,200,{shade:.2f})" if name == col else f"rgba(220,60,40,{shade:.2f})"
            tds.append(f'<td style="background:{color}">{count or ""}</td>')
        cells.append(f'<tr><th class="row">{escape(name)}</th>{"".join(tds)}</tr>')
    matrix = f'<table><tr><th>gold \\ predicted</th>{"".join(f"<th>{escape(c)}</th>" for c in cols)}</tr>{"".join(cells)}</table>'
    per_route = "".join(
        f'<tr><th class="row">{escape(r)}</th><td>{_num(m.precision)}</td><td>{_num(m.recall)}</td><td>{m.support}</td></tr>'
        for r, m in report.per_route.items()
    )
    gates = f"classifier {escape(report.classifier)}, min_margin {report.min_margin:.4f}, min_in_scope " + (
        f"{report.min_in_scope:.4f}" if report.min_in_scope is not None else "off"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{gates}; n = {report.n} ({report.n_in_scope} in scope, {report.n_oos} out of scope)</p>"
        f"{head}{_choice(report)}<h2>Confusion</h2>{matrix}<h2>Per route</h2>"
        f"<table><tr><th>route</th><th>precision</th><th>recall</th><th>support</th></tr>{per_route}</table></body></html>"
    )
