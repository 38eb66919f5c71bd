"""The split feed-forward's outlier channels computed apart (`_ffn`) against the shipped mask and Gather.

    python -m bench.retrieval.int8_ffn [--texts 200] [--skip 0] [--repeats 3] [--agreement 100] [--agreement-skip 0]

The default int8 recipe (`INT8_DEFAULT`) quantized from the fp32 export twice, both as the
embedder runs them (`_unpadded`'s branch): as shipped (each feed-forward's outlier channels zeroed
by a Mul and gathered for the fp32 side MatMul) and with `_ffn.separate_outlier_columns` (those
channels from MatMul and GELU nodes of their own). On ``--texts`` SciFact abstracts from ``--skip``
on, each alone on one thread (as `OnnxEmbedder.int8` runs a build's texts; `int8_profile`'s
session): the kernel time by operator of each, and their CPU seconds taking turns text by text.
The vectors: both embedders on ``--agreement`` SciFact and as many Medline abstracts from
``--agreement-skip`` on (Medline has 1,033), whole and their first sentence, each text alone: the
smallest cosine. Choose on abstracts 0-199 (the default), report on SciFact's 3000-3199 and both
collections' 900-999 (``--skip 3000 --agreement-skip 900``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets, log
from bench.report import publish
from bench.retrieval.embed_efficiency import _abstracts, _medline_records
from bench.retrieval.int8_profile import cost, profile

COMMAND = "python -m bench.retrieval.int8_ffn"
SHIPPED, APART = "shipped (mask + Gather)", "outlier columns apart"


def _graphs() -> dict[str, bytes]:
    from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import _quantize_spec
    from querywise.embed._quantize import quantize

    fp32, spec = bert_onnx(model_dir()), _quantize_spec(INT8_VARIANTS[INT8_DEFAULT])
    return {SHIPPED: quantize(fp32, **spec, outlier_columns_apart=False), APART: quantize(fp32, **spec)}


def node_counts(model: bytes) -> dict[str, int]:
    """Nodes by type in the branch a text alone takes (the If's unpadded one), as ONNX Runtime runs
    it: after its fusions (MatMulInteger, Cast and Mul into DynamicQuantizeMatMul or
    MatMulIntegerToFloat, the erf pattern into Gelu), with the embedder's settings."""
    import onnx
    import onnxruntime as ort

    from querywise.embed._onnx import UNFUSED

    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(UNFUSED))
        graph = onnx.load_model(options.optimized_model_filepath).graph
    (chooser,) = [n for n in graph.node if n.op_type == "If"]
    unpadded = next(onnx.helper.get_attribute_value(a) for a in chooser.attribute if a.name == "else_branch")
    return dict(Counter(n.op_type for n in unpadded.node).most_common())


def agreement(models: dict[str, bytes], n: int, skip: int) -> dict[str, Any]:
    """Both models' vectors, each text alone, on SciFact and Medline abstracts, whole and first sentence."""
    from querywise.embed import OnnxEmbedder

    whole = [t for records in (datasets.scifact_records(), _medline_records()) for t in _abstracts(records, skip + n)[skip:]]
    texts = [*whole, *(t.split(". ")[0] for t in whole)]
    a, b = (OnnxEmbedder(models[k], model_id=k, threads=1, batch_size=1, batch_tokens=0).embed(texts) for k in (SHIPPED, APART))
    cosine = np.sum(a * b, axis=1)
    return {"texts": len(texts), "min_cosine": round(float(cosine.min()), 8), "equal": bool(np.array_equal(a, b)),
            "max_abs_difference": float(np.max(np.abs(a - b)))}


def run(n_texts: int, skip: int, repeats: int, n_agreement: int, agreement_skip: int) -> dict[str, Any]:
    from querywise.embed import OnnxEmbedder, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import FP32_MODEL_ID

    load_before = os.getloadavg()[0]
    texts = _abstracts(datasets.scifact_records(), skip + n_texts)[skip:]
    ids = OnnxEmbedder(bert_onnx(model_dir()), model_id=FP32_MODEL_ID, threads=1)._ids(texts)
    models = _graphs()
    nodes = {name: node_counts(m) for name, m in models.items()}
    profiles = {name: profile(m, ids) for name, m in models.items()}
    turns = cost(models, ids, repeats)
    agreed = agreement(models, n_agreement, agreement_skip)
    log(f"nodes {nodes}, cost {turns}, agreement {agreed}")
    return {"texts": len(texts), "skip": skip, "agreement_skip": agreement_skip, "tokens": int(sum(len(x) for x in ids)), "repeats": repeats, "nodes": nodes,
            "profile": profiles, "cost": turns, "agreement": agreed, "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def markdown(result: dict[str, Any]) -> str:
    m, c, a = result["machine"], result["cost"], result["agreement"]
    names = list(result["profile"])
    lines = ["## The split feed-forward without its mask and Gather (`bench/retrieval/int8_ffn.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), 1-minute load {result['load_avg_1min'][0]} "
             f"before, {result['load_avg_1min'][1]} after. SciFact abstracts {result['skip']}-{result['skip'] + result['texts'] - 1} "
             f"({result['tokens']:,} tokens), each alone on one thread, as `OnnxEmbedder.int8` runs a build's texts; both graphs "
             "as the embedder runs them (the unpadded branch). Kernel shares move with others' load; the cost is the turn-by-turn ratio.", "",
             f"**Cost**, the two taking turns text by text ({result['repeats']} passes): CPU s {names[0]} {c['cpu_s'][names[0]]}, "
             f"{names[1]} {c['cpu_s'][names[1]]}; ratio per pass {c['ratio_per_turn']} (mean **{c['ratio_mean']}**). "
             f"Hidden states equal bit for bit: {c['hidden_states_equal']}.", "",
             f"**Vectors**: {a['texts']} texts (SciFact and Medline abstracts {result['agreement_skip']}-{result['agreement_skip'] + a['texts'] // 4 - 1}, "
             f"whole and first sentence), each alone: smallest cosine {a['min_cosine']}, equal bit for bit: {a['equal']} "
             f"(largest difference {a['max_abs_difference']:.2g}).", "",
             "| operator | " + " | ".join(f"{n}: nodes" for n in names) + " | " + " | ".join(f"{n}: kernel share" for n in names) + " |",
             "|---|" + "---|" * (2 * len(names))]
    ops = list(dict.fromkeys(op for n in names for op in (*result["nodes"][n], *result["profile"][n]["share"])))
    for op in ops:
        counts = " | ".join(str(result["nodes"][n].get(op, "")) for n in names)
        shares = " | ".join(f"{result['profile'][n]['share'][op]:.1%}" if op in result["profile"][n]["share"] else "" for n in names)
        lines.append(f"| {op} | {counts} | {shares} |")
    lines += ["", "Nodes: the unpadded branch as ONNX Runtime runs it, after its fusions (the quantizer's MatMulInteger, Cast and "
              "Mul into DynamicQuantizeMatMul or MatMulIntegerToFloat, the erf pattern into Gelu); shares: of the kernel time."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=200, help="SciFact abstracts profiled and timed")
    ap.add_argument("--skip", type=int, default=0, help="start at this abstract")
    ap.add_argument("--repeats", type=int, default=3, help="passes of the turn-by-turn cost")
    ap.add_argument("--agreement", type=int, default=100, help="abstracts of each collection whose vectors are compared (and their first sentences)")
    ap.add_argument("--agreement-skip", type=int, default=0, help="start the compared abstracts at this one")
    args = ap.parse_args(argv)
    command = COMMAND + "".join(f" --{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v != ap.get_default(k))
    publish("int8_ffn", run(args.texts, args.skip, args.repeats, args.agreement, args.agreement_skip), command=command, render=markdown)
    log("wrote bench/results/int8_ffn.json and .md")


if __name__ == "__main__":
    main()
