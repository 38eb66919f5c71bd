"""Standalone HTML renderings of evaluation reports (no scripts, no external assets)."""

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
"""


def router_report_html(report: RouterReport, *, title: str = "Router evaluation") -> str:
    """The headline figures, a confusion heat map (gold rows x predicted columns) and per-route table."""
    kpis = [
        ("in-scope accuracy", report.in_scope_accuracy),
        ("answered accuracy", report.answered_accuracy),
        ("deferred", report.deferred_share),
        ("OOS recall", report.oos_recall),
        ("OOS precision", report.oos_precision),
    ]
    head = "".join(f'<div class="kpi"><b>{v:.1%}</b>{escape(k)}</div>' for k, v in kpis)
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
        f'<tr><th class="row">{escape(r)}</th><td>{m.precision:.3f}</td><td>{m.recall:.3f}</td><td>{m.support}</td></tr>'
        for r, m in report.per_route.items()
    )
    gates = f"classifier {escape(report.classifier)}, min_margin {report.min_margin:.4f}, min_in_scope " + (
        f"{report.min_in_scope:.4f}" if report.min_in_scope is not None else "off"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1><p>{gates}; n = {report.n} ({report.n_in_scope} in scope, {report.n_oos} out of scope)</p>"
        f"{head}<h2>Confusion</h2>{matrix}<h2>Per route</h2>"
        f"<table><tr><th>route</th><th>precision</th><th>recall</th><th>support</th></tr>{per_route}</table></body></html>"
    )
