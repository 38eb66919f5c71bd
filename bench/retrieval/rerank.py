"""The reranking step's latency per candidate count (#16), with a tiny cross-encoder built here
from a random configuration (the plumbing's cost, not a real model's: a MiniLM-sized
cross-encoder costs far more per candidate; measure yours with `--model FOLDER`).

    .venv/bin/python -m bench.retrieval.rerank [--model FOLDER]

Writes bench/results/rerank.json and rerank.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import log, percentiles
from bench.report import publish

COMMAND = ".venv/bin/python -m bench.retrieval.rerank"
COUNTS = (10, 20, 50, 100)
REPEATS = 20


def tiny_model(folder: Path) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast  # type: ignore[attr-defined]

    words = ["the", "a", "warranty", "battery", "charge", "case", "part", "order", "ship", "return", "refund", "month", "hour", "day", "headphones", "buds", "pro", "lite"]
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(vocab_size=5 + len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=64, max_position_embeddings=512, num_labels=1)).save_pretrained(folder)  # type: ignore[call-arg]
    return folder


PASSAGE_CHARS = 600  # [rerank] passage_chars, the default


def llm_rows() -> dict[str, Any]:
    """The cost model's listwise rerank call per candidate count, at the embedded [llm] defaults."""
    from querywise.config import LLMSettings, Price
    from querywise.llm.cost import cost_model, rerank_tokens

    llm = LLMSettings()
    rows = []
    for n in COUNTS:
        m = cost_model(price=Price(usd_per_m_in=1.0, usd_per_m_out=5.0), ttft_s=llm.ttft_s, tokens_per_s=llm.tokens_per_s,
                       rerank=rerank_tokens(n, PASSAGE_CHARS // 4), rerank_top_n=n)
        assert m.rerank is not None
        (tokens_in, tokens_out), = m.rerank.calls
        rows.append({"candidates": n, "input_tokens": tokens_in, "output_tokens": tokens_out, "added_s": m.rerank.added_s, "usd_per_1000": m.rerank.usd_per_1000})
    return {"assumptions": m.assumptions.model_dump(), "rows": rows}


def main() -> None:
    from querywise.index import Hit
    from querywise.retrieve import CrossEncoderReranker, rerank

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, help="a cross-encoder folder of your own (default: the tiny random one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.model or tiny_model(Path(tmp))
        reranker = CrossEncoderReranker(folder)
        passage = " ".join(["the warranty on the headphones covers the battery and the case for a month"] * 8)  # ~120 words
        hits = [Hit(id=str(i), score=1.0, rank=i + 1, text=passage) for i in range(max(COUNTS))]
        rerank(reranker, "warranty on the buds", hits[:5], 5)  # load the model once
        rows = []
        for n in COUNTS:
            times = []
            for _ in range(REPEATS):
                t0 = time.perf_counter()
                rerank(reranker, "how long is the warranty on the buds", hits, n)
                times.append(time.perf_counter() - t0)
            p = percentiles(times)
            rows.append({"candidates": n, **p, "per_candidate_ms": round(p["p50_ms"] / n, 3)})
            log(str(rows[-1]))
    llm = llm_rows()
    result = {"model": "tiny random BERT (2 layers, hidden 32)" if args.model is None else str(args.model), "repeats": REPEATS, "rows": rows,
              "llm": llm}
    publish("rerank", result, command=COMMAND, render=markdown)


def markdown(result: dict[str, Any]) -> str:
    """rerank.md from rerank.json."""
    lines = ["# The reranking step: latency per candidate count", "", f"Command: `{result['machine']['command']}`. Model: {result['model']}; "
             f"{REPEATS} runs per count, passages of ~120 words, one CPU process.", "",
             "| candidates | p50 ms | p95 ms | per candidate (p50) ms |", "|---|---|---|---|"]
    lines += [f"| {r['candidates']} | {r['p50_ms']} | {r['p95_ms']} | {r['per_candidate_ms']} |" for r in result["rows"]]
    llm = result["llm"]
    a = llm["assumptions"]
    lines += ["", "## The LLM as a listwise reranker: the cost model (`querywise cost --rerank-top N`)", "",
              f"One call per searched request, after retrieval; each candidate cut to {PASSAGE_CHARS} characters (~{PASSAGE_CHARS // 4} tokens); "
              f"USD {a['usd_per_m_in']:g} / {a['usd_per_m_out']:g} per million tokens in / out, time to first token {a['ttft_s']:g} s, "
              f"{a['tokens_per_s']:g} tokens/s (the embedded `[llm]` defaults). Not measured against a model: no LLM is reachable here.", "",
              "| candidates | tokens in / out | added latency s | USD per 1,000 requests |", "|---|---|---|---|"]
    lines += [f"| {r['candidates']} | {r['input_tokens']} / {r['output_tokens']} | {r['added_s']} | {r['usd_per_1000']} |" for r in llm["rows"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
