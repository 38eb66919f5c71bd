"""Can the int8 graph's attention run cheaper with the same vectors? ONNX Runtime's attention kernels in its place (#39).

    python -m bench.retrieval.int8_attention [--texts 200] [--skip 0] [--repeats 3] [--agreement 100] [--medline-skip 0] [--out int8_attention]

The default int8 recipe as it was before `_attention` (`_unpadded`'s If, `_INT8_FORM` 1: "before"),
the embedder's graph now (that branch's attention reading the heads in place: `_attention`), and the
"before" graph with each layer's self-attention in its unpadded branch rewritten otherwise
(`attention_rewrites.REWRITES`): MultiHeadAttention without a mask (ONNX Runtime's flash path) and
with its present outputs declared (which keeps it off that path), QAttention (query/key/value int8
weights side by side), Q·K^T in int8 (another recipe), and no attention at all (a ceiling). Beside
them: the graph as quantized (the padding masks' Adds kept), a second session of the "before" graph
(the noise of the cost), and the softmax scale one float32 step larger in the int8 and the fp32
graph (how far a last-bit change moves each).

- agreement with the "before" graph: ``--agreement`` SciFact abstracts (from ``--skip``) and as many
  Medline abstracts (from ``--medline-skip``), each whole and its first sentence, each text alone:
  smallest cosine of the pooled vectors, and whether the hidden states are equal bit for bit;
- cost: CPU seconds of every graph on ``--texts`` SciFact abstracts (from ``--skip``), each text
  alone on a one-thread session with the embedder's settings, the graphs taking turns text by text
  (the order rotated every text), so others' load falls on all alike; ratio to the "before" graph.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench import datasets, log
from bench.report import publish
from bench.retrieval.embed_efficiency import _abstracts, _medline_records
from bench.retrieval.int8_profile import _feeds, _session

COMMAND = "python -m bench.retrieval.int8_attention"
SHIPPED, NOISE, AS_QUANTIZED = "before (_INT8_FORM 1: the unpadded branch)", "before, a second session", "as quantized (mask Adds kept)"
IN_PLACE = "heads in place (_attention: the embedder's graph now)"
NUDGED = "softmax scale + 1 float32 step"


def _models() -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The int8 graphs timed (the graph before first) and the fp32 pair of the sensitivity check."""
    import onnx

    from bench.retrieval.attention_rewrites import REWRITES, nudge_scale
    from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import _quantize_spec
    from querywise.embed._quantize import quantize

    fp32, spec = bert_onnx(model_dir()), _quantize_spec(INT8_VARIANTS[INT8_DEFAULT])
    before = quantize(fp32, **spec, heads_in_place=False)
    shipped = onnx.load_model_from_string(before)
    int8 = {SHIPPED: before, NOISE: before, IN_PLACE: quantize(fp32, **spec), AS_QUANTIZED: quantize(fp32, **spec, unpadded_branch=False)}
    int8 |= {name: rewrite(shipped).SerializeToString() for name, rewrite in REWRITES.items()}
    int8[NUDGED] = nudge_scale(shipped).SerializeToString()
    return int8, {"fp32": fp32, f"fp32, {NUDGED}": nudge_scale(onnx.load_model_from_string(fp32)).SerializeToString()}


def _embed(session: Any, ids: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Pooled unit vectors and hidden states, each text alone."""
    from querywise.embed._onnx import mean_pool_normalise

    hidden = [session.run(["last_hidden_state"], _feeds(x))[0] for x in ids]
    return np.concatenate([mean_pool_normalise(h, np.ones(h.shape[:2], dtype=np.int64)) for h in hidden]), hidden


def agreement(models: dict[str, bytes], ids: Sequence[np.ndarray]) -> dict[str, dict[str, Any]]:
    """Each model against the first: smallest and mean cosine, largest |difference| of a hidden state, equal bit for bit."""
    names = list(models)
    vectors, hidden = _embed(_session(models[names[0]]), ids)
    out = {}
    for name in names[1:]:
        v, h = _embed(_session(models[name]), ids)
        cosine = np.sum(v * vectors, axis=1)
        out[name] = {"min_cosine": round(float(cosine.min()), 8), "mean_1_minus_cosine": float(np.mean(1 - cosine)),
                     "max_abs_hidden": float(max(np.max(np.abs(a - b)) for a, b in zip(h, hidden, strict=True))),
                     "bit_equal": all(np.array_equal(a, b) for a, b in zip(h, hidden, strict=True))}
    return out


def cost(models: dict[str, bytes], ids: Sequence[np.ndarray], repeats: int) -> dict[str, Any]:
    """CPU seconds of each model over ``ids`` per pass, taking turns text by text (order rotated every text); ratio to the first."""
    sessions = {name: _session(m) for name, m in models.items()}
    names = list(sessions)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        spent = dict.fromkeys(names, 0.0)
        for i, x in enumerate(ids):
            k = (i + r) % len(names)
            for name in names[k:] + names[:k]:
                started = time.thread_time()  # one intra-op thread: the calling thread runs the model
                sessions[name].run(["last_hidden_state"], _feeds(x))
                spent[name] += time.thread_time() - started
        for n in names:
            cpu[n].append(round(spent[n], 3))
    base = sum(cpu[names[0]])
    return {"cpu_s": cpu, "ratio": {n: round(sum(cpu[n]) / base, 4) for n in names}}


def _ids(texts: Sequence[str]) -> list[np.ndarray]:
    from querywise.embed import OnnxEmbedder, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import FP32_MODEL_ID

    return OnnxEmbedder(bert_onnx(model_dir()), model_id=FP32_MODEL_ID, threads=1)._ids(texts)


def run(n_texts: int, skip: int, repeats: int, n_agreement: int, medline_skip: int) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    int8, fp32 = _models()
    scifact = _abstracts(datasets.scifact_records(), skip + max(n_texts, n_agreement))[skip:]
    medline = _abstracts(_medline_records(), medline_skip + n_agreement)[medline_skip:]
    whole = scifact[:n_agreement] + medline
    agree_ids = _ids([*whole, *(t.split(". ")[0] for t in whole)])
    agreed = agreement({n: m for n, m in int8.items() if n != NOISE}, agree_ids) | agreement(fp32, agree_ids)
    log(f"agreement {agreed}")
    cost_ids = _ids(scifact[:n_texts])
    turns = cost({n: m for n, m in int8.items() if n != NUDGED}, cost_ids, repeats)
    log(f"cost {turns}")
    return {"texts": n_texts, "skip": skip, "tokens": int(sum(len(x) for x in cost_ids)), "repeats": repeats,
            "agreement_texts": len(agree_ids), "medline_skip": medline_skip, "agreement": agreed, "cost": turns,
            "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def markdown(result: dict[str, Any]) -> str:
    m, c, a = result["machine"], result["cost"], result["agreement"]
    n = result["agreement_texts"] // 4
    lines = ["## The int8 graph's attention rewritten with ONNX Runtime's kernels (`bench/retrieval/int8_attention.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), 1-minute load {result['load_avg_1min'][0]} before, "
             f"{result['load_avg_1min'][1]} after. Cost: SciFact abstracts {result['skip']}-{result['skip'] + result['texts'] - 1} "
             f"({result['tokens']:,} tokens), each alone on one thread, the graphs taking turns text by text ({result['repeats']} passes); "
             f"ratio of CPU seconds to the graph before's. Agreement with the graph before: {result['agreement_texts']} texts "
             f"(SciFact abstracts {result['skip']}-{result['skip'] + n - 1} and Medline {result['medline_skip']}-{result['medline_skip'] + n - 1}, "
             "each whole and its first sentence, each alone); the fp32 rows compare with the fp32 graph.", "",
             "| graph | CPU ratio to before | CPU s per pass | smallest cosine | hidden states bit for bit | largest abs difference |", "|---|---|---|---|---|---|"]
    for name in dict.fromkeys([*c["ratio"], *a]):
        agreed = a.get(name)
        cells = [f"**{c['ratio'][name]}**" if name in c["ratio"] else "–", str(c["cpu_s"].get(name, "–")),
                 f"{agreed['min_cosine']:.8f}" if agreed else "–", str(agreed["bit_equal"]) if agreed else "–",
                 f"{agreed['max_abs_hidden']:.2g}" if agreed else "–"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=200, help="SciFact abstracts timed")
    ap.add_argument("--skip", type=int, default=0, help="start at this SciFact abstract")
    ap.add_argument("--repeats", type=int, default=3, help="passes of the turn-by-turn cost")
    ap.add_argument("--agreement", type=int, default=100, help="SciFact and Medline abstracts compared (each whole and first sentence)")
    ap.add_argument("--medline-skip", type=int, default=0, help="start at this Medline abstract")
    ap.add_argument("--out", default="int8_attention", help="result file stem under bench/results")
    args = ap.parse_args(argv)
    command = COMMAND + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ap.get_default(k))
    publish(args.out, run(args.texts, args.skip, args.repeats, args.agreement, args.medline_skip), command=command, render=markdown)
    log(f"wrote bench/results/{args.out}.json and .md")


if __name__ == "__main__":
    main()
