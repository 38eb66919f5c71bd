"""The int8 benchmark's rewrite (bench/retrieval/shared_products.py): products that share a quantized
input become one product and a Split with the same outputs bit for bit, and only those that share."""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.retrieval.shared_products import merge_shared_products

D = 16


def _quantized(names: tuple[str, ...], shared: bool) -> Any:
    """A graph as the quantizer writes it: one DynamicQuantizeLinear (two when not ``shared``), and per
    weight its MatMulInteger, Cast, Mul by (input scale x per-column weight scales) and bias Add."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"])]
    if not shared:
        nodes.append(helper.make_node("DynamicQuantizeLinear", ["x2"], ["x2q", "x2s", "x2z"]))
    inits, outs = [], []
    for i, name in enumerate(names):
        q = "xq" if shared or i == 0 else "x2q"
        s, z = q.replace("q", "s"), q.replace("q", "z")
        inits += [numpy_helper.from_array(rng.integers(-127, 128, (D, D), dtype=np.int8), f"{name}.weight_t_quantized"),
                  numpy_helper.from_array(np.zeros(D, np.int8), f"{name}.weight_t_zero_point"),
                  numpy_helper.from_array(rng.random(D, dtype=np.float32) / 50, f"{name}.weight_t_scale"),
                  numpy_helper.from_array(rng.standard_normal(D, dtype=np.float32), f"{name}.bias")]
        nodes += [helper.make_node("Mul", [s, f"{name}.weight_t_scale"], [f"{name}_scales"]),
                  helper.make_node("MatMulInteger", [q, f"{name}.weight_t_quantized", z, f"{name}.weight_t_zero_point"], [f"{name}_int"]),
                  helper.make_node("Cast", [f"{name}_int"], [f"{name}_cast"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [f"{name}_cast", f"{name}_scales"], [f"{name}_rescaled"]),
                  helper.make_node("Add", [f"{name}_rescaled", f"{name}.bias"], [f"{name}_out"])]
        outs.append(f"{name}_out")
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, "seq", D]) for x in (["x"] if shared else ["x", "x2"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    return list(ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds))


def test_the_query_key_and_value_products_become_one_with_the_same_outputs_bit_for_bit() -> None:
    names = ("layer.attention.self.query", "layer.attention.self.key", "layer.attention.self.value")
    model = _quantized(names, shared=True)
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 7, D), dtype=np.float32)}
    before = _run(model, feeds)
    assert merge_shared_products(model, ("attention.self.",)) == 2
    kinds = [n.op_type for n in model.graph.node]
    assert kinds.count("MatMulInteger") == 1 and kinds.count("Split") == 1
    after = _run(model, feeds)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def test_products_of_other_inputs_or_other_weights_are_left_alone() -> None:
    apart = _quantized(("layer.attention.self.query", "layer.attention.self.key"), shared=False)
    other = _quantized(("layer.attention.output.dense", "layer.intermediate.dense"), shared=True)
    for model in (apart, other):
        before = model.SerializeToString()
        assert merge_shared_products(model, ("attention.self.",)) == 0
        assert model.SerializeToString() == before
