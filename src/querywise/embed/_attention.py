"""The int8 graph's attention reading the heads where the projections wrote them: the same vectors, fewer Transposes.

    heads_in_place(model)  # in place, after `_unpadded.branch_unpadded`: the number of layers rewritten

In the branch a text embedded alone takes (`_unpadded`), a layer's self-attention is, as the
quantizer leaves `_graph`'s plain form: three int8 projections (query, key, value), each Reshaped
to (batch, seq, heads, head size) and Transposed to heads first (the key to (head size, seq)),
Q·K^T, Mul by 1/sqrt(head size), Softmax, scores·V, Transposed and Reshaped back: four Transposes
a layer. For one text, (seq, heads, head size) is already each head's (seq, head size) matrix at a
stride, which ONNX Runtime's `FusedMatMul` reads as it is (``transBatchA``/``transBatchB``; the
key with ``transB``, the scale as its ``alpha``, as ONNX Runtime fuses the Mul anyway): one
Transpose a layer is left, for the context. The products, the scale and the softmax are the same
MLAS routines on the same numbers: the hidden states come out equal bit for bit
(tests/embed/test_attention.py). CPU against the graph before, the graphs taking turns text by text
(3 passes, one thread, each text alone): 0.974x on SciFact abstracts 0-199, which chose it (load
6.6-8.5), and 0.973x on held-out abstracts 3000-3199 (load 7.0-8.4; a second session of the graph
before: 1.003x and 0.996x; bench/results/int8_attention-abstracts0.md, int8_attention.md). The
reshape to (seq, heads, head size) holds for one text only, so the If sends a batch of several
texts to the masked branch too (the same vectors; the embedder's int8 runs each text alone).

Only that arithmetic will do. The int8 graph turns a last-bit difference into a visible one: the
softmax scale one float32 step larger moved the vectors to a smallest cosine of 0.9992-0.9993 with
the graph before (fp32: 0.9999998), as each layer's dynamic quantization rounds a few values the
other way and the next layers spread them. That is why `MultiHeadAttention` without a mask moved
them as far: its CPU kernel then takes MLAS's flash-attention path (blocked online softmax, other
roundings); with a mask, or declared present outputs, it keeps the vectors and saves nothing, and
QAttention keeps them too at 0.975x / 0.984x (its per-head int8 products pack the input 36 times
a layer instead of 3). All of attention (Q·K^T, softmax, scores·V) is its arithmetic: the graph
without it ran at 0.59x, so only other arithmetic (a new recipe) could take much more.
Imports nothing of querywise: `_quantize` loads it by path in its child.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx

__all__ = ["heads_in_place", "replace_nodes"]

_MS = "com.microsoft"
_HEADS = "split_heads"  # `_graph._plain_constants`: (0, 0, heads, head size)
_ROWS, _ONE_TEXT = "heads_in_place_rows", "heads_in_place_one_text"


def heads_in_place(model: onnx.ModelProto) -> int:
    """Rewrite ``model`` (an int8 graph branched by `_unpadded`) in place: in the unpadded branch,
    every layer's attention reads the heads in place (two FusedMatMuls, one Transpose), and the If
    takes that branch for one unpadded text only. The number of layers rewritten; 0 (the model
    unchanged) without that branch, or without `_graph`'s attention in it."""
    from onnx import helper, numpy_helper

    branch, chooser = _unpadded_branch(model)
    values = {i.name: i for i in model.graph.initializer}
    if branch is None or _HEADS not in values or _ROWS in values:
        return 0
    heads, head_size = (int(v) for v in numpy_helper.to_array(values[_HEADS])[2:4])
    made = {o: n for n in branch.node for o in n.output}
    readers: dict[str, list[Any]] = {}
    for n in branch.node:
        for name in n.input:
            readers.setdefault(name, []).append(n)
    replaced: list[tuple[list[Any], list[Any]]] = []
    for softmax in [n for n in branch.node if n.op_type == "Softmax"]:
        found = _block(softmax, made, readers)
        if found is None:
            continue
        nodes, (q, k, v), scale_name, merged = found
        scale = float(numpy_helper.to_array(values[scale_name]).reshape(-1)[0])
        t = merged
        replaced.append((nodes, [
            *(helper.make_node("Reshape", [x, _ROWS], [f"{t}_{part}_rows"]) for x, part in ((q, "q"), (k, "k"), (v, "v"))),
            helper.make_node("FusedMatMul", [f"{t}_q_rows", f"{t}_k_rows"], [f"{t}_scores"], domain=_MS,
                             transBatchA=1, transBatchB=1, transB=1, alpha=scale),
            helper.make_node("Softmax", [f"{t}_scores"], [f"{t}_probabilities"], axis=-1),
            helper.make_node("FusedMatMul", [f"{t}_probabilities", f"{t}_v_rows"], [f"{t}_context"], domain=_MS, transBatchB=1),
            helper.make_node("Transpose", [f"{t}_context"], [f"{t}_context_rows"], perm=[1, 0, 2]),
            helper.make_node("Reshape", [f"{t}_context_rows", _ONE_TEXT], [merged]),
        ]))
    if not replaced:
        return 0
    replace_nodes(branch, replaced)
    model.graph.initializer.extend([numpy_helper.from_array(np.array([-1, heads, head_size], dtype=np.int64), _ROWS),
                                    numpy_helper.from_array(np.array([1, -1, heads * head_size], dtype=np.int64), _ONE_TEXT)])
    _one_text_only(model, chooser)
    if not any(o.domain == _MS for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_MS, 1))
    return len(replaced)


def _unpadded_branch(model: onnx.ModelProto) -> tuple[Any, Any]:
    """The If's branch for unpadded inputs (`_unpadded`'s ``else_branch``) and the If, or Nones."""
    ifs = [n for n in model.graph.node if n.op_type == "If"]
    if len(ifs) != 1:
        return None, None
    return next((a.g for a in ifs[0].attribute if a.name == "else_branch"), None), ifs[0]


def _one_text_only(model: onnx.ModelProto, chooser: Any) -> None:
    """The If's condition ("padded") widened to "padded, or more than one text": the rewritten
    branch reads one text's heads."""
    from onnx import helper, numpy_helper

    model.graph.initializer.extend([numpy_helper.from_array(np.array(0, dtype=np.int64), "heads_in_place_zero"),
                                    numpy_helper.from_array(np.array(1, dtype=np.int64), "heads_in_place_one")])
    padded = chooser.input[0]
    guard = [
        helper.make_node("Shape", ["attention_mask"], ["heads_in_place_shape"]),
        helper.make_node("Gather", ["heads_in_place_shape", "heads_in_place_zero"], ["heads_in_place_texts"], axis=0),
        helper.make_node("Equal", ["heads_in_place_texts", "heads_in_place_one"], ["heads_in_place_single"]),
        helper.make_node("Not", ["heads_in_place_single"], ["heads_in_place_several"]),
        helper.make_node("Or", [padded, "heads_in_place_several"], ["heads_in_place_masked"]),
    ]
    nodes = list(model.graph.node)
    at = next(i for i, n in enumerate(nodes) if n.op_type == "If")
    nodes[at].input[0] = "heads_in_place_masked"
    nodes[at:at] = guard
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _block(softmax: Any, made: dict[str, Any], readers: dict[str, list[Any]]) -> tuple[list[Any], list[str], str, str] | None:
    """The nodes from the three projections' outputs to the merged context around ``softmax``, the
    projections' outputs (query, key, value), the scale's name and the merged context's; None
    where the graph is not `_graph._attention`'s form."""
    try:
        scaled = made[softmax.input[0]]
        scores = made[scaled.input[0]]
        (context,) = readers[softmax.output[0]]
        (back,) = readers[context.output[0]]
        (merge,) = readers[back.output[0]]
        heads = [made[scores.input[0]], made[scores.input[1]], made[context.input[1]]]
        splits = [made[h.input[0]] for h in heads]
    except (KeyError, ValueError):
        return None
    kinds = [scaled.op_type, scores.op_type, context.op_type, back.op_type, merge.op_type, *(h.op_type for h in heads), *(s.op_type for s in splits)]
    if kinds != ["Mul", "MatMul", "MatMul", "Transpose", "Reshape", *["Transpose"] * 3, *["Reshape"] * 3]:
        return None
    if [_perm(n) for n in (*heads, back)] != [[0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3], [0, 2, 1, 3]]:
        return None  # query, key (transposed), value into heads; the context back
    if any(len(readers[n.output[0]]) != 1 for n in [*heads, *splits, scores, scaled]):
        return None  # a value read elsewhere too must stay
    return [*splits, *heads, scores, scaled, softmax, context, back, merge], [s.input[0] for s in splits], scaled.input[1], merge.output[0]


def _perm(transpose: Any) -> list[int]:
    return next((list(a.ints) for a in transpose.attribute if a.name == "perm"), [])


def replace_nodes(branch: Any, replaced: list[tuple[list[Any], list[Any]]]) -> None:
    """Each block's nodes out of ``branch``, its new nodes in at the place of the first, in one
    pass (rewriting the node list copies the nodes, so a second pass would not find them)."""
    gone = {id(n) for nodes, _ in replaced for n in nodes}
    at: dict[int, list[Any]] = {}
    for nodes, new in replaced:
        mine = {id(n) for n in nodes}
        at[id(next(n for n in branch.node if id(n) in mine))] = new
    kept: list[Any] = []
    for n in branch.node:
        kept += at.get(id(n), [])
        if id(n) not in gone:
            kept.append(n)
    del branch.node[:]
    branch.node.extend(kept)
