"""`querywise cost`: what the LLM tier adds in latency and money, from the cost model."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from querywise.cli._app import ConfigOpt, app, esc, fail, out, settings_from
from querywise.config import RerankSettings


def _pair(text: str, option: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise fail(f"{option} expects IN,OUT token counts such as 600,80, got {text!r}") from None
    if a < 0 or b < 0:
        raise fail(f"{option}: token counts must be >= 0, got {text!r}")
    return a, b


def _rerank_call(settings: RerankSettings, top: int | None, passage_tokens: int | None) -> dict[str, Any]:
    """The LLM reranker's call for `cost_model`: when `[rerank] kind = "llm"` or --rerank-top asks."""
    from querywise.llm.cost import rerank_tokens

    if top is None and settings.kind != "llm":
        return {}
    n = top or settings.top_n
    return {"rerank": rerank_tokens(n, passage_tokens or max(1, settings.passage_chars // 4)), "rerank_top_n": n}


@app.command("cost")
def cost_cmd(
    config: ConfigOpt = None,
    usd_per_m_in: Annotated[float | None, typer.Option(help="USD per million input tokens (default: the [llm] price of its model, else 1.0).")] = None,
    usd_per_m_out: Annotated[float | None, typer.Option(help="USD per million output tokens (default: [llm] price, else 5.0).")] = None,
    ttft: Annotated[float | None, typer.Option(help="Time to first token, seconds (default: [llm] ttft_s).")] = None,
    tokens_per_s: Annotated[float | None, typer.Option(help="Decoding rate, output tokens per second (default: [llm] tokens_per_s).")] = None,
    chain: Annotated[list[str] | None, typer.Option(help="IN,OUT tokens of one call of a chain; repeat per call (default: 3 x 500,40).")] = None,
    one_call: Annotated[str, typer.Option(help="IN,OUT tokens of the one structured plan call.")] = "600,80",
    gated: Annotated[float, typer.Option(min=0.0, max=1.0, help="Share of requests the gate sends to the LLM.")] = 0.3,
    rerank_top: Annotated[int | None, typer.Option(min=1, help="Candidates the LLM reranker sees (default: [rerank] top_n).")] = None,
    passage_tokens: Annotated[int | None, typer.Option(min=1, help="Tokens of each candidate in its prompt (default: [rerank] passage_chars / 4).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the cost model as JSON.")] = False,
) -> None:
    """The cost model: a chain of calls vs one structured call, and that call gated to a share."""
    from querywise.config import Price
    from querywise.llm.cost import cost_model

    settings = settings_from(config)
    llm = settings.llm
    price = llm.price_for(llm.model) or Price(usd_per_m_in=1.0, usd_per_m_out=5.0)
    price = Price(
        usd_per_m_in=price.usd_per_m_in if usd_per_m_in is None else usd_per_m_in,
        usd_per_m_out=price.usd_per_m_out if usd_per_m_out is None else usd_per_m_out,
    )
    calls = [_pair(c, "--chain") for c in chain] if chain else [(500, 40)] * 3
    model = cost_model(
        price=price, ttft_s=llm.ttft_s if ttft is None else ttft, tokens_per_s=llm.tokens_per_s if tokens_per_s is None else tokens_per_s,
        chain=calls, one_call=_pair(one_call, "--one-call"), gated_share=gated,
        **_rerank_call(settings.rerank, rerank_top, passage_tokens),
    )
    if as_json:
        typer.echo(model.model_dump_json(indent=2))
        return
    a = model.assumptions
    out.print(
        f"[bold]assumptions[/] USD {a.usd_per_m_in:g} / {a.usd_per_m_out:g} per million tokens in / out, "
        f"time to first token {a.ttft_s:g} s, {a.tokens_per_s:g} tokens/s",
        highlight=False,
    )
    table = Table(title="added per request", title_justify="left")
    for col in ("path", "calls (in, out tokens)", "added latency", "USD per 1,000 requests"):
        table.add_column(col)
    table.add_row(f"{len(model.chain.calls)}-call chain", " + ".join(f"{i}/{o}" for i, o in model.chain.calls), f"+{model.chain.added_s:.2f} s", f"{model.chain.usd_per_1000:.2f}")
    table.add_row("one structured call", " + ".join(f"{i}/{o}" for i, o in model.one_call.calls), f"+{model.one_call.added_s:.2f} s", f"{model.one_call.usd_per_1000:.2f}")
    g = model.gated
    table.add_row(f"gated to {g.share:.0%}", "one call, when needed", f"+{g.added_s_mean:.2f} s mean, +{g.added_s_p95:.2f} s p95", f"{g.usd_per_1000:.2f}")
    if model.rerank is not None:
        r = model.rerank
        table.add_row(f"LLM rerank of the top {model.rerank_top_n}", " + ".join(f"{i}/{o}" for i, o in r.calls),
                      f"+{r.added_s:.2f} s, after retrieval", f"{r.usd_per_1000:.2f}")
    out.print(table)
    out.print(f"p95: {esc(g.p95_note)}", highlight=False)
    if model.rerank is not None:
        out.print("the LLM reranker calls once per request that searches (an identifier lookup is not reranked): "
                  "it adds its latency to p95 as well", highlight=False)
