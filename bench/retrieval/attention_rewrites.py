"""The int8 graph's self-attention rewritten with ONNX Runtime's attention kernels (bench/retrieval/int8_attention.py).

    rewritten = qattention(onnx.load_model_from_string(int8))  # a copy; the input is untouched (REWRITES: all, by name)

Each rewrite acts on the unpadded branch of the int8 graph as the embedder runs it (`_unpadded`: the If's
``else_branch``, which every text embedded alone takes) and leaves the padded branch as it is. A layer's
attention block is found from its Softmax (`_graph._attention`'s plain form as the quantizer leaves it):
the query, key and value projections (MatMulInteger, Cast, Mul by the scales, Add of the bias), their
Reshape and Transpose into heads, MatMul, Mul by the scale, Softmax, MatMul, Transpose and Reshape back.
These are measurements, not the embedder's graph (which reads the heads in place: `querywise.embed._attention`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from querywise.embed._attention import replace_nodes

if TYPE_CHECKING:
    import onnx

__all__ = ["REWRITES", "Block", "attention_blocks", "int8_scores", "mha", "no_attention", "nudge_scale", "qattention"]

MS = "com.microsoft"


@dataclass
class Block:
    """One layer's self-attention in the unpadded branch: the projections' outputs (bias added,
    (batch, seq, hidden)), each one's Reshape and Transpose into heads, the nodes from the scores
    to the merged context, and the softmax scale."""

    projections: dict[str, str]  # "q", "k", "v" -> the Add output
    heads: dict[str, list[Any]]  # "q", "k", "v" -> [Reshape, Transpose]
    tail: list[Any]  # MatMul (Q·K^T), Mul (scale), Softmax, MatMul (scores·V), Transpose, Reshape
    scale: float

    @property
    def nodes(self) -> list[Any]:
        return [n for k in "qkv" for n in self.heads[k]] + self.tail

    @property
    def merged(self) -> str:
        return str(self.tail[-1].output[0])


def _unpadded(model: onnx.ModelProto) -> Any:
    (if_node,) = (n for n in model.graph.node if n.op_type == "If")
    return next(a.g for a in if_node.attribute if a.name == "else_branch")


def _constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def attention_blocks(model: onnx.ModelProto, graph: Any = None) -> list[Block]:
    """The self-attention blocks of ``graph`` (default: ``model``'s unpadded branch), in order."""
    graph = _unpadded(model) if graph is None else graph
    values = _constants(model)
    made = {o: n for n in graph.node for o in n.output}
    readers: dict[str, list[Any]] = {}
    for n in graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    blocks = []
    for softmax in (n for n in graph.node if n.op_type == "Softmax"):
        scaled = made[softmax.input[0]]
        scores = made[scaled.input[0]]
        context = readers[softmax.output[0]][0]
        back = readers[context.output[0]][0]
        merge = readers[back.output[0]][0]
        heads = {"q": made[scores.input[0]], "k": made[scores.input[1]], "v": made[context.input[1]]}
        split = {k: made[t.input[0]] for k, t in heads.items()}
        blocks.append(Block({k: s.input[0] for k, s in split.items()}, {k: [split[k], heads[k]] for k in "qkv"},
                            [scores, scaled, softmax, context, back, merge], float(values[scaled.input[1]].reshape(-1)[0])))
    return blocks


def _prune(graph: Any) -> None:
    outputs = {o.name for o in graph.output}
    nodes = list(graph.node)
    while True:
        read = {i for n in nodes for i in n.input} | outputs
        kept = [n for n in nodes if any(o in read for o in n.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del graph.node[:]
    graph.node.extend(nodes)


def _rewrite(model: onnx.ModelProto, build: Callable[[onnx.ModelProto, Block], list[Any]]) -> onnx.ModelProto:
    from onnx import helper

    out = copy.deepcopy(model)
    graph = _unpadded(out)
    replace_nodes(graph, [(block.nodes, build(out, block)) for block in attention_blocks(out, graph)])
    _prune(graph)
    if not any(o.domain == MS for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid(MS, 1))
    return out


def _heads(model: onnx.ModelProto) -> tuple[int, int]:
    """Heads and head size, from `_graph._plain_constants`' ``split_heads`` (0, 0, heads, head_dim)."""
    split = _constants(model)["split_heads"]
    return int(split[2]), int(split[3])


def mha(model: onnx.ModelProto, *, present: bool) -> onnx.ModelProto:
    """Each block as one `MultiHeadAttention` reading the three projections (bias already added),
    no mask. ``present``: the node also declares the present key and value outputs (unread), which
    keeps ONNX Runtime's CPU kernel off its flash-attention path (taken only without mask, bias
    of the scores, past or present); off it, the kernel runs the same GEMMs and softmax as the graph."""
    from onnx import helper

    heads, _ = _heads(model)

    def build(_: onnx.ModelProto, b: Block) -> list[Any]:
        outs = [b.merged, *([f"{b.merged}_present_key", f"{b.merged}_present_value"] if present else [])]
        return [helper.make_node("MultiHeadAttention", [b.projections[k] for k in "qkv"], outs, domain=MS, num_heads=heads, scale=b.scale)]

    return _rewrite(model, build)


def qattention(model: onnx.ModelProto) -> onnx.ModelProto:
    """Each block as one `QAttention` from the query/key/value input's DynamicQuantizeLinear: the
    three int8 weights side by side (with their per-column scales, zero points and biases), the
    products written straight into heads, no Transpose left."""
    from onnx import helper, numpy_helper

    heads, _ = _heads(model)
    values = _constants(model)

    def build(out: onnx.ModelProto, b: Block) -> list[Any]:
        graph = _unpadded(out)
        made = {o: n for n in graph.node for o in n.output}
        parts = {}
        for k in "qkv":
            add = made[b.projections[k]]
            mul = made[add.input[0]]
            integer = made[made[mul.input[0]].input[0]]  # MatMulInteger -> Cast -> Mul
            scales = made[mul.input[1]]  # the input's scale times the weight's
            parts[k] = {"x": integer.input[0], "x_zero": integer.input[2], "w": integer.input[1], "w_zero": integer.input[3],
                        "bias": add.input[1], "x_scale": scales.input[0], "w_scale": scales.input[1]}
        names = {}
        for key, axis in (("w", 1), ("w_zero", 0), ("bias", 0), ("w_scale", 0)):
            names[key] = f"{b.merged}_qkv_{key}"
            side_by_side = np.concatenate([values[parts[k][key]] for k in "qkv"], axis=axis)
            out.graph.initializer.append(numpy_helper.from_array(side_by_side, names[key]))
        q = parts["q"]
        inputs = [q["x"], names["w"], names["bias"], q["x_scale"], names["w_scale"], "", q["x_zero"], names["w_zero"]]
        return [helper.make_node("QAttention", inputs, [b.merged], domain=MS, num_heads=heads, scale=b.scale)]

    return _rewrite(model, build)


def int8_scores(model: onnx.ModelProto) -> onnx.ModelProto:
    """Another recipe (moves the vectors): Q·K^T as a uint8 product of the dynamically quantized
    query and key heads (one scale each per call), softmax and scores·V as before."""
    from onnx import TensorProto, helper

    def build(_: onnx.ModelProto, b: Block) -> list[Any]:
        t = b.merged
        scores, scaled, *rest = b.tail
        return [*b.nodes[:6],
                helper.make_node("DynamicQuantizeLinear", [scores.input[0]], [f"{t}_q8", f"{t}_q_scale", f"{t}_q_zero"]),
                helper.make_node("DynamicQuantizeLinear", [scores.input[1]], [f"{t}_k8", f"{t}_k_scale", f"{t}_k_zero"]),
                helper.make_node("MatMulInteger", [f"{t}_q8", f"{t}_k8", f"{t}_q_zero", f"{t}_k_zero"], [f"{t}_scores32"]),
                helper.make_node("Cast", [f"{t}_scores32"], [f"{t}_scores_f"], to=TensorProto.FLOAT),
                helper.make_node("Mul", [f"{t}_q_scale", f"{t}_k_scale"], [f"{t}_qk_scale"]),
                helper.make_node("Mul", [f"{t}_qk_scale", scaled.input[1]], [f"{t}_all_scale"]),
                helper.make_node("Mul", [f"{t}_scores_f", f"{t}_all_scale"], [scaled.output[0]]),
                *rest]

    return _rewrite(model, build)


def no_attention(model: onnx.ModelProto) -> onnx.ModelProto:
    """A ceiling, not a model (wrong vectors): each layer's context is its value projection, so
    Q·K^T, softmax, scores·V, the heads' Transposes and the query and key projections are gone."""
    out = copy.deepcopy(model)
    graph = _unpadded(out)
    for b in attention_blocks(out, graph):
        for n in graph.node:
            n.input[:] = [b.projections["v"] if i == b.merged else i for i in n.input]
    _prune(graph)
    return out


def nudge_scale(model: onnx.ModelProto) -> onnx.ModelProto:
    """The softmax scale (1/sqrt(head_dim), `_graph`'s ``scale``) one float32 step larger, in
    every branch: how far a last-bit change of the attention's arithmetic moves the vectors."""
    from onnx import numpy_helper

    out = copy.deepcopy(model)
    for i in out.graph.initializer:
        if i.name == "scale":
            value = numpy_helper.to_array(i)
            i.CopyFrom(numpy_helper.from_array(np.nextafter(value, np.float32(1)).astype(np.float32), "scale"))
    return out


REWRITES: dict[str, Callable[[onnx.ModelProto], onnx.ModelProto]] = {
    "MultiHeadAttention, no mask (flash path)": lambda m: mha(m, present=False),
    "MultiHeadAttention, present outputs declared": lambda m: mha(m, present=True),
    "QAttention (Q/K/V int8 side by side)": qattention,
    "int8 Q·K^T (another recipe)": int8_scores,
    "no attention (ceiling, wrong vectors)": no_attention,
}
