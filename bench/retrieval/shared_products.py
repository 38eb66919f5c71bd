"""The int8 graph's products that read one quantized input merged into one (bench/retrieval/int8_qkv.py).

    merged = merge_shared_products(onnx.load_model_from_string(int8), only=QKV)  # in place: the chains merged away

The quantizer leaves each layer's query, key and value projections as three MatMulIntegers on the
one quantized input (the same int8 values, scale and zero point), each followed by its Cast, its
Mul by (input scale x weight scale per column) and its bias Add; ONNX Runtime fuses each chain into
a MatMulIntegerToFloat at session time, each packing that input again. So are the split
feed-forward's two halves of W1 (`querywise.embed._ffn`: the ordinary columns and the outlier
ones). Here such chains become one MatMulInteger over the weights side by side (int8 values, zero
points and per-column scales concatenated the same way), one Cast, Mul and bias Add, then a Split
back into the chains' outputs, which every reader reads as before. Integer sums are exact and each
column keeps its weights, scale and bias, so each output is the same float (the benchmark checks
the hidden states bit for bit). These are measurements, not the embedder's graph: the Split's copy
cost what the one product saved (bench/results/int8_qkv.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from querywise.embed._attention import replace_nodes

if TYPE_CHECKING:
    import onnx

__all__ = ["QKV", "W1", "merge_shared_products"]

QKV = ("attention.self.",)  # the query, key and value weights' names hold this
W1 = ("intermediate.dense.",)  # the feed-forward's first weight and its outlier columns (`_ffn`)
_MERGED = "_merged"  # suffix of the merged chains' initializers and values


def merge_shared_products(model: onnx.ModelProto, only: tuple[str, ...]) -> int:
    """Rewrite ``model`` (an int8 graph from `quantize_dynamic`, branched by `_unpadded` or not) in
    place: in its graph and each If's branches, the quantizer's MatMulInteger chains whose weight's
    name holds one of ``only`` and that share their quantized input become one chain and a Split.
    The number of chains merged away; 0 (the model unchanged) where none share."""
    values = {i.name: i for i in model.graph.initializer}
    made: dict[str, tuple[str, str, str, str, list[int]]] = {}  # both branches read one merged copy
    merged = 0
    for graph in _graphs(model):
        producer = {o: n for n in graph.node for o in n.output}
        readers: dict[str, list[Any]] = {}
        for n in graph.node:
            for name in n.input:
                readers.setdefault(name, []).append(n)
        groups: dict[tuple[str, str, str], list[list[Any]]] = {}
        for node in graph.node:
            if node.op_type != "MatMulInteger" or not any(part in node.input[1] for part in only):
                continue
            chain = _chain(node, producer, readers, values)
            if chain is not None:  # one quantized input: its values, zero point and scale
                groups.setdefault((node.input[0], node.input[2], chain[0].input[0]), []).append(chain)
        replaced = []
        for chains in (c for c in groups.values() if len(c) > 1):
            key = "+".join(c[1].input[1] for c in chains)
            if key not in made:
                made[key] = _merge_weights(model, values, chains)
            replaced.append(([n for c in chains for n in c], _merged_nodes(chains, made[key])))
            merged += len(chains) - 1
        if replaced:
            replace_nodes(graph, replaced)
    return merged


def _graphs(model: onnx.ModelProto) -> list[Any]:
    """The model's graph and its Ifs' branches (`_unpadded`), which read the outer initializers."""
    out = [model.graph]
    for node in model.graph.node:
        out += [a.g for a in node.attribute if a.name in ("then_branch", "else_branch")]
    return out


def _chain(product: Any, producer: dict[str, Any], readers: dict[str, list[Any]], values: dict[str, Any]) -> list[Any] | None:
    """The quantizer's nodes around ``product``: [Mul (input scale x weight scales), MatMulInteger,
    Cast, Mul (by that), Add (bias)], each read only by the next; None where the graph differs."""
    try:
        (cast,) = readers[product.output[0]]
        (rescale,) = readers[cast.output[0]]
        (bias_add,) = readers[rescale.output[0]]
        scales = producer[rescale.input[1]]
    except (KeyError, ValueError):
        return None
    if [cast.op_type, rescale.op_type, bias_add.op_type, scales.op_type] != ["Cast", "Mul", "Add", "Mul"]:
        return None
    if len(readers[scales.output[0]]) != 1 or rescale.input[0] != cast.output[0] or bias_add.input[0] != rescale.output[0]:
        return None
    if not all(name in values for name in (product.input[1], product.input[3], scales.input[1], bias_add.input[1])):
        return None
    return [scales, product, cast, rescale, bias_add]


def _merge_weights(model: onnx.ModelProto, values: dict[str, Any], chains: list[list[Any]]) -> tuple[str, str, str, str, list[int]]:
    """The chains' int8 weights, zero points, weight scales and biases side by side, as new
    initializers: their names, and each chain's number of columns."""
    from onnx import numpy_helper

    def joined(names: list[str]) -> str:
        name = names[0] + _MERGED
        parts = [numpy_helper.to_array(values[n]) for n in names]
        model.graph.initializer.append(numpy_helper.from_array(np.concatenate(parts, axis=-1), name))
        return name

    weights = [c[1].input[1] for c in chains]
    widths = [int(numpy_helper.to_array(values[w]).shape[-1]) for w in weights]
    return (joined(weights), joined([c[1].input[3] for c in chains]), joined([c[0].input[1] for c in chains]),
            joined([c[4].input[1] for c in chains]), widths)


def _merged_nodes(chains: list[list[Any]], merged: tuple[str, str, str, str, list[int]]) -> list[Any]:
    """One chain on the merged weights, then a Split into the chains' outputs (their names kept)."""
    from onnx import TensorProto, helper

    weight, zero_point, scale, bias, widths = merged
    scales, product = chains[0][0], chains[0][1]
    t = product.output[0] + _MERGED
    return [
        helper.make_node("Mul", [scales.input[0], scale], [f"{t}_scales"]),
        helper.make_node("MatMulInteger", [product.input[0], weight, product.input[2], zero_point], [t]),
        helper.make_node("Cast", [t], [f"{t}_cast"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{t}_cast", f"{t}_scales"], [f"{t}_rescaled"]),
        helper.make_node("Add", [f"{t}_rescaled", bias], [f"{t}_biased"]),
        helper.make_node("Constant", [], [f"{t}_widths"], value=helper.make_tensor(f"{t}_widths", TensorProto.INT64, [len(widths)], widths)),
        helper.make_node("Split", [f"{t}_biased", f"{t}_widths"], [c[4].output[0] for c in chains], axis=-1),
    ]
