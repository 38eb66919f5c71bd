"""Where the int8 embedder's time goes, as a build runs it: ONNX Runtime's profiler, operator by operator.

    python -m bench.retrieval.int8_profile [--texts 200] [--skip 0] [--repeats 3]

The default int8 recipe (`INT8_DEFAULT`) quantized from the fp32 export twice: as the quantizer
writes it ("as quantized") and as the embedder gets it (`_unpadded`: an If that skips the padding
masks' Adds when nothing is padded). Each of ``--texts`` SciFact abstracts (from ``--skip`` on) is
run alone on a one-thread session with the embedder's settings (`_onnx.UNFUSED`), as
`OnnxEmbedder.int8` runs every text:

- the profile: kernel time by operator type, grouped into int8 products (DynamicQuantizeMatMul,
  MatMulIntegerToFloat and the DynamicQuantizeLinear that feeds the query, key and value products),
  fp32 products (attention's Q·K^T and scores·V), the padding mask's Adds (an Add of 4-D scores)
  and the rest; an If's own time is its branch's nodes (each profiled) plus what it adds, reported apart;
- the cost: CPU seconds of each graph on the same texts, the two taking turns text by text (the
  order swapped every text), so others' load falls on both alike; and whether the vectors are equal.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import datasets, log
from bench.report import publish

COMMAND = "python -m bench.retrieval.int8_profile"
INT8_PRODUCTS = ("DynamicQuantizeMatMul", "MatMulIntegerToFloat", "DynamicQuantizeLinear")
FP32_PRODUCTS = ("MatMul", "FusedMatMul")


def _graphs() -> dict[str, bytes]:
    from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import _quantize_spec
    from querywise.embed._quantize import quantize

    fp32, spec = bert_onnx(model_dir()), _quantize_spec(INT8_VARIANTS[INT8_DEFAULT])
    return {"as quantized": quantize(fp32, **spec, unpadded_branch=False), "as the embedder runs it": quantize(fp32, **spec)}


def _session(model: bytes, profile_prefix: str | None = None) -> Any:
    import onnxruntime as ort

    from querywise.embed._onnx import UNFUSED

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix is not None:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"], disabled_optimizers=list(UNFUSED))


def _feeds(ids: np.ndarray) -> dict[str, np.ndarray]:
    row = ids[None, :]
    return {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}


def profile(model: bytes, ids: Sequence[np.ndarray]) -> dict[str, Any]:
    """Kernel milliseconds by operator type (a 4-D Add apart: the padding mask), each text alone."""
    with tempfile.TemporaryDirectory() as tmp:
        session = _session(model, str(Path(tmp) / "profile"))
        for x in ids:
            session.run(["last_hidden_state"], _feeds(x))
        events = json.loads(Path(session.end_profiling()).read_text(encoding="utf-8"))
    by: Counter[str] = Counter()
    runs = 0.0
    for ev in events:
        if ev.get("name") == "model_run":
            runs += ev["dur"]
        if ev.get("cat") != "Node" or not ev["name"].endswith("_kernel_time"):
            continue
        op = ev["args"]["op_name"]
        shapes = ev["args"].get("output_type_shape", [])
        if op == "Add" and shapes and len(next(iter(shapes[0].values()), [])) == 4:
            op = "Add (padding mask)"
        by[op] += ev["dur"]
    inner = sum(d for op, d in by.items() if op not in ("If", "ReduceMin", "Equal"))
    if_added = max(0.0, by.pop("If", 0) - inner) if "If" in by else 0.0
    total = sum(by.values()) + if_added
    groups: dict[str, float] = {"int8 products": sum(by[o] for o in INT8_PRODUCTS), "fp32 products (attention)": sum(by[o] for o in FP32_PRODUCTS)}
    groups["the rest"] = total - sum(groups.values())
    return {"kernel_ms": round(total / 1e3, 1), "model_run_ms": round(runs / 1e3, 1), "if_overhead_ms": round(if_added / 1e3, 1),
            "by_op_ms": {op: round(d / 1e3, 1) for op, d in by.most_common()},
            "share": {op: round(d / total, 4) for op, d in by.most_common()},
            "groups": {g: round(d / total, 4) for g, d in groups.items()}}


def cost(models: dict[str, bytes], ids: Sequence[np.ndarray], repeats: int) -> dict[str, Any]:
    """CPU seconds of each model over ``ids``, taking turns text by text; the vectors' agreement."""
    sessions = {name: _session(m) for name, m in models.items()}
    names = list(sessions)
    cpu: dict[str, list[float]] = {n: [] for n in names}
    last: dict[str, list[np.ndarray]] = {}
    for r in range(repeats):
        spent = dict.fromkeys(names, 0.0)
        out: dict[str, list[np.ndarray]] = {n: [] for n in names}
        for i, x in enumerate(ids):
            for name in names[(i + r) % 2 :] + names[: (i + r) % 2]:
                started = time.thread_time()  # one intra-op thread: the calling thread runs the model
                (hidden,) = sessions[name].run(["last_hidden_state"], _feeds(x))
                spent[name] += time.thread_time() - started
                out[name].append(hidden)
        for n in names:
            cpu[n].append(round(spent[n], 3))
        last = out
    first, second = names
    equal = all(np.array_equal(a, b) for a, b in zip(last[first], last[second], strict=True))
    ratios = [round(b / a, 4) for a, b in zip(cpu[first], cpu[second], strict=True)]
    return {"cpu_s": cpu, "ratio_per_turn": ratios, "ratio_mean": round(float(np.mean(ratios)), 4), "hidden_states_equal": equal}


def run(n_texts: int, skip: int, repeats: int) -> dict[str, Any]:
    from querywise.embed import OnnxEmbedder, model_dir
    from querywise.embed._graph import bert_onnx
    from querywise.embed._onnx import FP32_MODEL_ID

    load_before = os.getloadavg()[0]
    records = [r for _, r in zip(range(skip + n_texts), datasets.scifact_records(), strict=False)][skip:]
    texts = [f"{r['title']}\n{r['text']}".strip() for r in records]
    ids = OnnxEmbedder(bert_onnx(model_dir()), model_id=FP32_MODEL_ID, threads=1)._ids(texts)
    models = _graphs()
    profiles = {name: profile(m, ids) for name, m in models.items()}
    turns = cost(models, ids, repeats)
    log(f"profiles {profiles}, cost {turns}")
    return {"texts": len(texts), "skip": skip, "tokens": int(sum(len(x) for x in ids)), "repeats": repeats,
            "profile": profiles, "cost": turns, "load_avg_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = ["## Where the int8 embedder's time goes (`bench/retrieval/int8_profile.py`)", "",
             f"Command: `{m['command']}`; {m['date']}, {m['cores']} cores ({m['cpu']}), 1-minute load {result['load_avg_1min'][0]} "
             f"before, {result['load_avg_1min'][1]} after. SciFact abstracts {result['skip']}-{result['skip'] + result['texts'] - 1} "
             f"({result['tokens']:,} tokens), each alone on one thread, as `OnnxEmbedder.int8` runs a build's texts. Kernel times "
             "move with others' load (the caches are shared): read the shares, and the turn-by-turn ratio for the cost.", ""]
    names = list(result["profile"])
    lines += ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for group in result["profile"][names[0]]["groups"]:
        lines.append(f"| **{group}** | " + " | ".join(f"{result['profile'][n]['groups'][group]:.1%}" for n in names) + " |")
    ops = list(dict.fromkeys(op for n in names for op in result["profile"][n]["share"]))
    for op in ops:
        lines.append(f"| {op} | " + " | ".join(f"{result['profile'][n]['share'].get(op, 0):.1%}" for n in names) + " |")
    lines.append("| kernel ms (If's own ms) | " + " | ".join(
        f"{result['profile'][n]['kernel_ms']:,} ({result['profile'][n]['if_overhead_ms']})" for n in names) + " |")
    c = result["cost"]
    lines += ["", f"Cost, the two taking turns text by text ({result['repeats']} passes): CPU s {names[0]} {c['cpu_s'][names[0]]}, "
              f"{names[1]} {c['cpu_s'][names[1]]}; ratio per pass {c['ratio_per_turn']} (mean **{c['ratio_mean']}**). "
              f"Hidden states equal bit for bit: {c['hidden_states_equal']}."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=200, help="SciFact abstracts profiled")
    ap.add_argument("--skip", type=int, default=0, help="start at this abstract")
    ap.add_argument("--repeats", type=int, default=3, help="passes of the turn-by-turn cost")
    args = ap.parse_args(argv)
    command = COMMAND + "".join(f" --{k} {v}" for k, v in vars(args).items() if v != ap.get_default(k))
    publish("int8_profile", run(args.texts, args.skip, args.repeats), command=command, render=markdown)
    log("wrote bench/results/int8_profile.json and .md")


if __name__ == "__main__":
    main()
