"""Does a text's int8 vector depend on what it is embedded with? And what each fix costs.

    python -m bench.retrieval.int8_batch [--skip-static] [--batched-corpus]

ONNX Runtime's dynamic quantization scales each MatMul's activations by their largest value over
the whole call (`DynamicQuantizeLinear`: one scale per tensor), so a text embedded in a batch (a
build's 1,024 padded tokens, padding included) comes out other than the same text alone (a query
at search). Measured on the choosing set only: SciFact's corpus and train claims, and 200 Medline
abstracts (seed 0: 300 SciFact and 200 Medline documents for agreement).

- agreement: cosine between fp32 and int8, and between int8 alone and int8 in batches of 1,024
  padded tokens, over the documents and SciFact's train claims; CPU seconds on one thread;
- the rankings: dense nDCG@10 of SciFact's train claims over its 5,183 abstracts, for each pairing
  of a query vector (fp32, int8 batched, int8 alone) with a corpus (fp32, int8 alone, and with
  `--batched-corpus` int8 batched), paired against fp32 x fp32: int8 alone x int8 alone is what
  `OnnxEmbedder.int8` does; int8 alone x int8 batched was what a search did before; fp32 x int8
  an asymmetric search. The corpus' fp32 and int8 vectors come from (and go to) the shared
  embedding cache, under `load_embedder`'s model ids (int8's names its recipe);
- static quantization (`--skip-static` leaves it out): QDQ with activation scales calibrated
  offline (MinMax) on `int8_calibration.txt`, generic text we wrote (no collection's text), weights
  per channel, the weight MatMuls only. Its vectors cannot depend on the batch; the question is what
  the fixed scales lose.

Otherwise vectors are made in memory: the int8 model is `quantize_int8` of the fp32 export with the
per-channel recipe, what `load_embedder("onnx-int8")` runs.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import DATA, log
from bench.report import publish
from bench.retrieval.int8_rank import _agreement

COMMAND = "python -m bench.retrieval.int8_batch"
CALIBRATION = Path(__file__).with_name("int8_calibration.txt")
BATCH_TOKENS = 1024  # what a build's int8 batches held before each text was embedded alone


def _alone(embedder: Any, texts: Sequence[str]) -> np.ndarray[Any, Any]:
    return np.vstack([embedder.embed([t]) for t in texts])


def _one_by_one(embedder: Any) -> Callable[[Sequence[str]], np.ndarray[Any, Any]]:
    return lambda texts: _alone(embedder, texts)


def _cpu(fn: Callable[[Sequence[str]], np.ndarray[Any, Any]], texts: Sequence[str]) -> tuple[np.ndarray[Any, Any], float]:
    started = time.process_time()
    out = fn(texts)
    return out, round(time.process_time() - started, 1)


def static_int8(fp32: Path | bytes) -> bytes:
    """``fp32`` with QDQ int8 MatMuls whose activation scales were calibrated (MinMax) on our own
    generic text, each text alone (so no padding enters a range)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
    from tokenizers import Tokenizer

    from querywise.embed import model_dir

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    feeds = []
    for line in CALIBRATION.read_text(encoding="utf-8").splitlines():
        if line.strip():
            ids = np.array([tokenizer.encode(line).ids], dtype=np.int64)
            feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.rest = iter(feeds)

        def get_next(self) -> dict[str, Any] | None:
            return next(self.rest, None)

    model = onnx.load_model_from_string(fp32 if isinstance(fp32, bytes) else fp32.read_bytes())
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "fp32.onnx", Path(tmp) / "static.onnx"
        onnx.save(model, source)
        quantize_static(str(source), str(out), Reader(), quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul"],
                        per_channel=True, weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
                        calibrate_method=CalibrationMethod.MinMax, extra_options={"MatMulConstBOnly": True})
        return out.read_bytes()


def _sample() -> tuple[list[str], list[str], list[str], list[Any]]:
    """(documents for agreement, SciFact's corpus texts, their ids, SciFact's judged train claims)."""
    from bench import datasets
    from querywise.index.points import SearchTexts

    corpus, _ = datasets.scifact("test")
    medline, _ = datasets.beir(DATA / "medline", "test")
    _, claims = datasets.scifact("train")
    pick = random.Random(0)
    texts = list(SearchTexts(corpus))
    docs = pick.sample(texts, 300) + pick.sample(list(SearchTexts(medline)), 200)
    return docs, texts, [c.id for c in corpus], [c for c in claims if c.relevant]


def _ndcg10(queries: np.ndarray[Any, Any], corpus: np.ndarray[Any, Any], ids: Sequence[str], cases: Sequence[Any]) -> np.ndarray[Any, Any]:
    """Per case: graded nDCG@10 of the corpus ranked by dot product (the vectors are unit length)."""
    top = np.argsort(-(queries @ corpus.T), axis=1)[:, :10]
    discount = 1 / np.log2(np.arange(2, 12))
    out = []
    for case, row in zip(cases, top, strict=True):
        gains = np.array([2 ** case.relevant.get(ids[j], 0) - 1 for j in row])
        ideal = np.array(sorted((2**g - 1 for g in case.relevant.values()), reverse=True)[:10])
        out.append(float(gains @ discount) / float(ideal @ discount[: len(ideal)]))
    return np.array(out)


def run(static: bool, batched_corpus: bool) -> dict[str, Any]:
    from querywise.config import Settings
    from querywise.embed import INT8_VARIANTS, OnnxEmbedder, export_fp32_onnx, load_embedder, quantize_int8

    docs, corpus, ids, cases = _sample()
    claims = [c.message for c in cases]
    fp32_model = export_fp32_onnx(None)
    fp32 = OnnxEmbedder(fp32_model, model_id="fp32", threads=1)
    ref_docs, ref_claims = fp32.embed(docs), fp32.embed(claims)
    models = {"dynamic, per channel": quantize_int8(fp32_model, INT8_VARIANTS["per-channel"])}
    if static:
        models["static QDQ, MinMax on our text"] = static_int8(fp32_model)
    agreement = []
    for name, model in models.items():
        e = OnnxEmbedder(model, model_id=name, threads=1, batch_tokens=BATCH_TOKENS)
        batched, batched_s = _cpu(e.embed, docs)
        alone, alone_s = _cpu(_one_by_one(e), docs)
        claims_batched, claims_alone = e.embed(claims), _alone(e, claims)
        row = {"model": name, "cpu_s_batched": batched_s, "cpu_s_alone": alone_s,
               "documents": {"batched_vs_fp32": _agreement(batched, ref_docs), "alone_vs_fp32": _agreement(alone, ref_docs),
                             "alone_vs_batched": _agreement(alone, batched)},
               "claims": {"batched_vs_fp32": _agreement(claims_batched, ref_claims), "alone_vs_fp32": _agreement(claims_alone, ref_claims),
                          "alone_vs_batched": _agreement(claims_alone, claims_batched)}}
        log(f"{name}: {row}")
        agreement.append(row)

    cache = Settings().cache_dir / "embeddings"
    fp32_two = OnnxEmbedder(fp32_model, model_id="fp32")
    int8 = OnnxEmbedder(models["dynamic, per channel"], model_id="int8", batch_tokens=BATCH_TOKENS)
    empty = np.zeros((0, fp32.dim), dtype=np.float32)
    vectors = {"fp32": (fp32_two.embed(claims), load_embedder("onnx", cache_dir=cache, bulk=True).embed(corpus)),
               "int8 batched": (int8.embed(claims), int8.embed(corpus) if batched_corpus else empty),
               "int8 alone": (_alone(int8, claims), load_embedder("onnx-int8", cache_dir=cache, bulk=True).embed(corpus))}
    base = _ndcg10(vectors["fp32"][0], vectors["fp32"][1], ids, cases)
    rankings = [{"query": "fp32", "corpus": "fp32", "ndcg": round(float(base.mean()), 4)}]
    pairs = [("int8 batched", "int8 batched"), ("int8 alone", "int8 batched"), ("int8 alone", "int8 alone"),
             ("fp32", "int8 alone"), ("fp32", "int8 batched")]
    for query, corpus_of in [(q, c) for q, c in pairs if batched_corpus or c != "int8 batched"]:
        scores = _ndcg10(vectors[query][0], vectors[corpus_of][1], ids, cases)
        diff = scores - base
        rankings.append({"query": query, "corpus": corpus_of, "ndcg": round(float(scores.mean()), 4),
                         "delta": round(float(diff.mean()), 4), "se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 4),
                         "up": int(np.sum(diff > 1e-9)), "down": int(np.sum(diff < -1e-9))})
        log(f"query {query} x corpus {corpus_of}: {rankings[-1]}")
    return {"sample": {"documents": len(docs), "claims": len(claims), "corpus": len(corpus)}, "agreement": agreement, "rankings": rankings}


def markdown(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["sample"]
    lines = ["## Does an int8 vector depend on its batch? (`bench/retrieval/int8_batch.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), load average at the end {m['load_avg_at_write']}.", "",
             f"Choosing set only: {s['documents']} SciFact + Medline documents and SciFact's {s['claims']} judged train claims for "
             "agreement (one thread; CPU seconds for the documents); batched = batches of 1,024 padded tokens, alone = one text a call.", "",
             "| model | documents: alone vs batched (min / p1 / mean) | batched vs fp32 | alone vs fp32 | claims: alone vs batched | "
             "batched vs fp32 | alone vs fp32 | CPU s batched / alone |",
             "|---|---|---|---|---|---|---|---|"]

    def a(d: dict[str, float]) -> str:
        return f"{d['min']} / {d['p1']} / {d['mean']}"

    for r in result["agreement"]:
        d, c = r["documents"], r["claims"]
        lines.append(f"| {r['model']} | {a(d['alone_vs_batched'])} | {a(d['batched_vs_fp32'])} | {a(d['alone_vs_fp32'])} | "
                     f"{a(c['alone_vs_batched'])} | {a(c['batched_vs_fp32'])} | {a(c['alone_vs_fp32'])} | "
                     f"{r['cpu_s_batched']} / {r['cpu_s_alone']} |")
    lines += ["", f"Dense nDCG@10 of SciFact's {s['claims']} train claims over its {s['corpus']:,} abstracts, paired against fp32 x fp32 "
              "(SE: of the paired mean difference):", "",
              "| query vectors | corpus vectors | nDCG@10 | delta (SE) | claims up / down |", "|---|---|---|---|---|"]
    for r in result["rankings"]:
        delta = f"{r['delta']:+.4f} ({r['se']:.4f})" if "delta" in r else "-"
        moved = f"{r['up']} / {r['down']}" if "up" in r else "-"
        lines.append(f"| {r['query']} | {r['corpus']} | {r['ndcg']:.4f} | {delta} | {moved} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-static", action="store_true", help="leave static quantization out")
    ap.add_argument("--batched-corpus", action="store_true", help="rank the corpus embedded in 1,024-token batches too")
    args = ap.parse_args(argv)
    flags = (" --skip-static" if args.skip_static else "") + (" --batched-corpus" if args.batched_corpus else "")
    publish("int8-batch", run(not args.skip_static, args.batched_corpus), command=COMMAND + flags, render=markdown)
    log("wrote bench/results/int8-batch.json and .md")


if __name__ == "__main__":
    main()
