"""Does turning ONNX Runtime's SkipLayerNormalization fusion off (`_onnx.UNFUSED`) cost int8 any quality?

    .venv/bin/python -m bench.retrieval.int8_fusion

SciFact (5,183 abstracts, 300 test claims), built and asked as bench/retrieval/int8.py's options
are (hybrid nDCG@10 as typed and through the default deployment), with fp32, with int8 as the
embedder runs it now and with int8 as it ran before d0ae077 (the fusion on): each pair compared
case by case (paired bootstrap interval, sign-flip p), and the cosine between the two int8
vectors of every abstract. Each int8 session caches its vectors under an id of its own (both
would be "onnx-int8" in an index); fp32's, bit for bit the same either way, come from the default
cache. Writes bench/results/int8_fusion.json.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets, log
from bench.report import write_json

COMMAND = ".venv/bin/python -m bench.retrieval.int8_fusion"


def run() -> dict[str, Any]:
    from bench.retrieval.int8 import _compare, _ndcg
    from querywise.config import Settings
    from querywise.embed import CachedEmbedder, OnnxEmbedder, export_int8_onnx, load_embedder
    from querywise.embed._onnx import UNFUSED
    from querywise.index.points import SearchTexts

    settings = Settings()
    cache = settings.cache_dir / "embeddings"
    chunks, cases = datasets.scifact("test")
    cases = [c for c in cases if c.relevant]
    # fp32 from the default cache's place even when QUERYWISE_CACHE_DIR points elsewhere (its vectors never changed)
    fp32 = load_embedder("onnx", cache_dir=Path.home() / ".cache" / "querywise" / "embeddings", bulk=True)
    model = export_int8_onnx(cache / "models")  # what `[embedding] kind = "onnx-int8"` runs
    # Each text alone, as `OnnxEmbedder.int8` runs it; the ids say so, so vectors cached by the
    # committed run (batches of 1,024 tokens, ids without "-alone") are not read back.
    sessions = {name: OnnxEmbedder(model, model_id=model_id, batch_size=1, batch_tokens=0, spinning=False, unfused=unfused)
                for name, model_id, unfused in (("int8", "int8-unfused-alone", UNFUSED), ("int8 fused (before d0ae077)", "int8-fused-alone", ()))}
    rows = {"fp32": _ndcg(settings, chunks, cases, "fusion-fp32", fp32)}
    for name, inner in sessions.items():
        with CachedEmbedder(inner, cache) as embedder:
            rows[name] = _ndcg(settings, chunks, cases, f"fusion-{inner.model_id}", embedder)
        log(f"{name}: as typed {rows[name]['as_typed']}, default {rows[name]['default']} (fp32 {rows['fp32']['as_typed']}, {rows['fp32']['default']})")
    texts = list(SearchTexts(chunks))
    with CachedEmbedder(sessions["int8"], cache) as a, CachedEmbedder(sessions["int8 fused (before d0ae077)"], cache) as b:
        cos = np.sum(a.embed(texts) * b.embed(texts), axis=1)  # both cached by now: look-ups only
    n = (len(chunks), len(cases))
    return {"int8_against_fp32": _compare(rows["fp32"], rows["int8"], *n),
            "fused_against_fp32": _compare(rows["fp32"], rows["int8 fused (before d0ae077)"], *n),
            "int8_against_fused": _compare(rows["int8 fused (before d0ae077)"], rows["int8"], *n),
            "cosine_int8_to_fused": {"min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 5)},
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    write_json("int8_fusion.json", run(), command=COMMAND)
    log("wrote bench/results/int8_fusion.json")


if __name__ == "__main__":
    main()
