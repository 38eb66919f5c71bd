"""What this CPU can do, so an embedder's speed is a share of the machine and not only of a peer.

`gemm_rates()` times dense matrix products of the shapes a MiniLM layer runs (1,024 tokens x 384
-> 1,536 and back, and a square 2,048 one) with numpy (fp32), ONNX Runtime's MatMul (fp32) and
its MatMulInteger (uint8 x int8 -> int32, what a dynamically quantized MatMul runs), each on every
core, best of `repeats`. `model_flops(lengths)` counts the useful work of all-MiniLM-L6-v2 on
texts of those token lengths (padding excluded).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

# all-MiniLM-L6-v2: 6 layers, hidden 384, feed-forward 1,536. A token costs 2 FLOPs per weight it
# meets: 4 x 384^2 (Q, K, V, output) + 2 x 384 x 1,536 (feed-forward) a layer = 21.23 MFLOP; and
# attention (Q.K^T and the weighted sum of V) costs 2 x 2 x 384 x L a layer, 9,216 x L, for a text
# of L tokens. Embeddings, layer norms, softmax and pooling are left out (under 1%).
LAYERS, HIDDEN, FFN = 6, 384, 1536
FLOPS_PER_TOKEN = 2 * LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
ATTENTION_FLOPS_PER_TOKEN_PER_LENGTH = 2 * LAYERS * 2 * HIDDEN
SHAPES = ((1024, 384, 1536), (1024, 1536, 384), (2048, 2048, 2048))  # (M, K, N)


def model_flops(lengths: Sequence[int]) -> float:
    """The model's FLOPs over texts of these token lengths (after truncation, before padding)."""
    n = np.asarray(lengths, dtype=np.float64)
    return float(np.sum(n * (FLOPS_PER_TOKEN + ATTENTION_FLOPS_PER_TOKEN_PER_LENGTH * n)))


def _best_rate(run: Callable[[], object], flops: float, repeats: int) -> float:
    run()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return flops / best / 1e9


def _ort_session(op: str, k: int, n: int) -> Any:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    if op == "MatMul":
        a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["m", k])
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["m", n])
        b = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "b")
        node = helper.make_node("MatMul", ["a", "b"], ["y"])
    else:
        a = helper.make_tensor_value_info("a", TensorProto.UINT8, ["m", k])
        out = helper.make_tensor_value_info("y", TensorProto.INT32, ["m", n])
        b = numpy_helper.from_array(rng.integers(-127, 128, (k, n)).astype(np.int8), "b")
        node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    graph = helper.make_graph([node], "gemm", [a], [out], initializer=[b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def gemm_rates(repeats: int = 20) -> dict[str, dict[str, float]]:
    """GFLOP/s (GOP/s for int8) of each engine at each shape, and the best shape's as "peak"."""
    rng = np.random.default_rng(0)
    out: dict[str, dict[str, float]] = {"numpy fp32": {}, "onnxruntime MatMul fp32": {}, "onnxruntime MatMulInteger int8": {}}
    for m, k, n in SHAPES:
        shape, flops = f"{m}x{k}x{n}", 2.0 * m * k * n
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        q = rng.integers(0, 256, (m, k)).astype(np.uint8)
        runs: dict[str, Callable[[], object]] = {
            "numpy fp32": partial(np.matmul, a, b),
            "onnxruntime MatMul fp32": partial(_ort_session("MatMul", k, n).run, None, {"a": a}),
            "onnxruntime MatMulInteger int8": partial(_ort_session("MatMulInteger", k, n).run, None, {"a": q}),
        }
        for engine, run in runs.items():
            out[engine][shape] = round(_best_rate(run, flops, repeats), 1)
    for rates in out.values():
        rates["peak"] = max(rates.values())
    return out
