"""The int8 graph with a branch for inputs without padding: the same vectors, the mask Adds skipped.

    branch_unpadded(model)  # in place, after quantization: If(any padding, the graph as it was, the graph without the mask)

`OnnxEmbedder.int8` runs each text alone, so its inputs are never padded and every attention
layer's padding mask (`_graph._plain_constants`' ``mask_add``: 0 wherever a token is) adds zeros
to the scores: one (batch, 12, seq, seq) Add a layer, 9% of the int8 graph's kernel time on one
thread (ONNX Runtime's profiler, 200 SciFact abstracts each alone; bench/results/int8-profile.md).
x + 0 is x in floating point, so the branch without those Adds gives the vectors bit for bit; a
padded batch (the benchmarks' batched int8 runs) takes the branch that keeps them. One ``If`` at
the top chooses; both branches read the weights from the outer graph (no copy). ONNX Runtime
optimizes each branch as it did the graph (the same fusions; `_onnx.UNFUSED` applies there too).
Imports nothing of querywise: `_quantize` loads it by path in its child.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

__all__ = ["MASK", "branch_unpadded"]

MASK = "mask_add"  # the additive padding mask's name in `_graph`'s plain export


def branch_unpadded(model: onnx.ModelProto) -> int:
    """Rewrite ``model`` (in place) as ``If(ReduceMin(attention_mask) == 0)``: then the graph as it
    was, else the graph without the Adds of `MASK` (nor the nodes only they used). The number of
    Adds skipped; 0 (and the model unchanged) when the graph has none, e.g. an already branched one."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    skipped = {n.output[0]: n.input[0] if n.input[1] == MASK else n.input[1]
               for n in graph.node if n.op_type == "Add" and MASK in n.input}
    if not skipped or len(graph.output) != 1:
        return 0
    output = graph.output[0].name
    masked = [copy.deepcopy(n) for n in graph.node]
    plain = [copy.deepcopy(n) for n in graph.node if n.output[0] not in skipped]
    for node in plain:
        node.input[:] = [skipped.get(name, name) for name in node.input]
    plain = _used(plain, output)
    zero = "unpadded_zero"
    graph.initializer.append(numpy_helper.from_array(np.array(0, dtype=np.int64), zero))
    head = [
        helper.make_node("ReduceMin", ["attention_mask"], ["unpadded_min"], keepdims=0),
        helper.make_node("Equal", ["unpadded_min", zero], ["padded"]),
        helper.make_node("If", ["padded"], [output], then_branch=_branch(masked, "masked", output, helper, TensorProto),
                         else_branch=_branch(plain, "unpadded", output, helper, TensorProto)),
    ]
    del graph.node[:]
    graph.node.extend(head)
    return len(skipped)


def _used(nodes: list[Any], output: str) -> list[Any]:
    """``nodes`` less those whose outputs nothing reads (the mask's Cast, Sub, Mul, Unsqueeze)."""
    while True:
        read = {name for n in nodes for name in n.input} | {output}
        kept = [n for n in nodes if any(o in read for o in n.output)]
        if len(kept) == len(nodes):
            return kept
        nodes = kept


def _branch(nodes: list[Any], name: str, output: str, helper: Any, tensor_proto: Any) -> Any:
    """A branch of the If: ``nodes``, their ``output`` renamed (the If's output keeps the name)."""
    inner = f"{output}_{name}"
    for node in nodes:
        node.output[:] = [inner if o == output else o for o in node.output]
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(inner, tensor_proto.FLOAT, None)])
