"""The split feed-forward computed without its mask and its Gather: the same vectors, less work.

    separate_outlier_columns(model)  # in place, after `_smooth.split_outliers`, before quantization

`_smooth.split_outliers` leaves each feed-forward as: h = GELU(x W1 + b1) over all 1,536 channels,
then ``h * mask`` (the outlier channels zeroed, so the int8 output MatMul's one activation scale
spans the ordinary ones) into that MatMul, whose outlier weight rows are zero, and ``Gather(h,
outliers)`` into an fp32 side MatMul; their sum, then the bias. On the int8 graph, one text alone
on one thread, the mask's Mul and the Gather along the last axis took 3% and 4% of the kernel
time (bench/results/int8_ffn.md). Here the outlier channels are computed apart instead: W1's
outlier columns (and b1's entries) move to a MatMul of their own that reads the same input, with
its own GELU, into the side MatMul; the ordinary columns keep the first MatMul, its GELU and the
output MatMul (whose zero rows go). Nothing to zero, nothing to gather, and the same numbers once
quantized: W1 is quantized per output column, so each column keeps its int8 values and scale;
both MatMuls read one quantized copy of x (one scale, as before); the output MatMul's activation
scale is the range of the ordinary channels and zero, as it was with the zeros in; zero rows add
nothing to an integer sum. The output's bias stays after the side's sum: added before it, ONNX
Runtime folds it into the int8 MatMul (one Add a layer less), but the sums round differently and
the next layers' per-text activation scales carry that on (smallest cosine to the shipped vectors
0.9994 on 400 SciFact and Medline texts, against the 0.99999 that "the same vectors" allows).
Imports nothing of querywise: `_quantize` loads it by path in its child.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

__all__ = ["COLUMN_MULTIPLE", "OUTLIER_COLUMNS", "separate_outlier_columns"]

OUTLIER_COLUMNS = "_outlier_columns"  # suffix of the moved W1 columns' and b1 entries' initializers
# ONNX Runtime's int8 MatMul (MLAS, this CPU's VNNI kernels) writes output columns 16 at a time; a
# remainder costs about a whole pass: 243 tokens by 384 into 1,356 columns took 345 us of CPU, into
# 1,360 columns 281, into 1,536 328 (one thread, alternated 400 times). The inner dimension's
# length did not matter (1,356 or 1,360 rows: 364 and 363 us; fp32 180 or 192: 228 and 235 us).
COLUMN_MULTIPLE = 16

# `_smooth.split_outliers`' names for the mask and the index it adds after a feed-forward's GELU.
_MASK, _INDEX = "_inlier_mask", "_outlier_index"


def separate_outlier_columns(model: onnx.ModelProto) -> int:
    """Rewrite ``model`` (fp32, split by `_smooth.split_outliers`, not yet quantized) in place so
    that each split GELU output's outlier channels come from MatMul and GELU nodes of their own
    instead of a mask and a Gather (module docstring). The number of feed-forwards rewritten; 0
    when there is no split whose GELU is the exported pattern (x W1 + b1, then exact GELU)."""
    from onnx import numpy_helper

    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    dropped: set[str] = set()  # by output: protobuf's Python wrappers are not stable identities
    added: dict[str, list[Any]] = {}
    rewritten = 0
    for gather in [n for n in graph.node if n.op_type == "Gather" and n.input[1].endswith(_INDEX)]:
        h = gather.input[0]
        gelu = _gelu_chain(h, producer, weights)
        masks = [n for n in readers.get(h, []) if n.op_type == "Mul"]
        sides = readers.get(gather.output[0], [])
        if gelu is None or len(masks) != 1 or len(readers[h]) != 2 or not all(_by_weight(n, weights) for n in sides):
            continue
        (mask,) = masks
        if not all(_by_weight(n, weights) for n in readers.get(mask.output[0], [])):
            continue
        first, bias_add = gelu[0], gelu[1]
        w1_name, b1_name = first.input[1], bias_add.input[1]
        outliers = numpy_helper.to_array(weights[gather.input[1]])
        w1, b1 = numpy_helper.to_array(weights[w1_name]), numpy_helper.to_array(weights[b1_name])
        keep = _complement(outliers, w1.shape[1])
        # Each part's columns padded with zeros to a multiple of `COLUMN_MULTIPLE`: a zero column
        # gives 0, GELU(0) is 0, and a zero activation column adds nothing, in int8 as in fp32.
        _set(weights, w1_name, _padded(w1[:, keep], 1))
        _set(weights, b1_name, _padded(b1[keep], 0))
        moved_w, moved_b = w1_name + OUTLIER_COLUMNS, b1_name + OUTLIER_COLUMNS
        graph.initializer.extend([numpy_helper.from_array(_padded(w1[:, outliers], 1), moved_w),
                                  numpy_helper.from_array(_padded(b1[outliers], 0), moved_b)])
        added[h] = _copy_chain(gelu, first.name + OUTLIER_COLUMNS, moved_w, moved_b, gather.output[0])
        for out_matmul in readers[mask.output[0]]:  # the int8 output MatMul(s): read h whole, their zero rows gone
            _set(weights, out_matmul.input[1], _padded(numpy_helper.to_array(weights[out_matmul.input[1]])[keep], 0))
            out_matmul.input[0] = h
        for side in readers[gather.output[0]]:  # the fp32 side MatMul(s): as many rows as the padded outliers
            _set(weights, side.input[1], _padded(numpy_helper.to_array(weights[side.input[1]]), 0))
        dropped |= {gather.output[0], mask.output[0]}
        rewritten += 1
    kept = []
    for node in graph.node:  # the moved chains after the original GELU: still sorted
        if node.output[0] not in dropped:
            kept.append(node)
            for o in node.output:
                kept += added.get(o, [])
    unused = {i.name for i in graph.initializer} - {name for n in kept for name in n.input}
    del graph.node[:]
    graph.node.extend(kept)
    kept_weights = [i for i in graph.initializer if i.name not in unused or not i.name.endswith((_MASK, _INDEX))]
    del graph.initializer[:]
    graph.initializer.extend(kept_weights)
    return rewritten


def _gelu_chain(h: str, producer: dict[str, Any], weights: dict[str, Any]) -> list[Any] | None:
    """The nodes that compute ``h`` from a MatMul by a weight, as `_graph` writes them: MatMul, Add
    (bias), Div (by sqrt 2), Erf, Add (1), Mul (by the MatMul's value), Mul (by 0.5); or None."""
    last = producer.get(h)
    if last is None or last.op_type != "Mul":
        return None
    product = producer.get(last.input[0])
    if product is None or product.op_type != "Mul":
        return None
    inner = product.input[0]
    plus_one = producer.get(product.input[1])
    erf = producer.get(plus_one.input[0]) if plus_one is not None and plus_one.op_type == "Add" else None
    div = producer.get(erf.input[0]) if erf is not None and erf.op_type == "Erf" else None
    bias_add = producer.get(inner)
    if div is None or div.op_type != "Div" or div.input[0] != inner or bias_add is None or bias_add.op_type != "Add":
        return None
    first = producer.get(bias_add.input[0])
    if first is None or first.op_type != "MatMul" or first.input[1] not in weights or bias_add.input[1] not in weights:
        return None
    return [first, bias_add, div, erf, plus_one, product, last]


def _copy_chain(chain: list[Any], name: str, weight: str, bias: str, output: str) -> list[Any]:
    """``chain`` (`_gelu_chain`'s nodes) again on ``weight`` and ``bias``, its last output ``output``,
    its MatMul named ``name`` (not excluded from quantization: int8 as the columns it takes over)."""
    import copy

    renamed = {n.output[0]: f"{n.output[0]}{OUTLIER_COLUMNS}" for n in chain}
    renamed[chain[-1].output[0]] = output
    copies = []
    for node in chain:
        twin = copy.deepcopy(node)
        twin.input[:] = [renamed.get(i, i) for i in twin.input]
        twin.output[:] = [renamed[o] for o in twin.output]
        copies.append(twin)
    copies[0].input[1], copies[0].name = weight, name
    copies[1].input[1] = bias  # `_gelu_chain` checked the Add's order: (MatMul's value, bias)
    return copies


def _by_weight(node: Any, weights: dict[str, Any]) -> bool:
    return bool(node.op_type == "MatMul" and node.input[1] in weights)


def _set(weights: dict[str, Any], name: str, value: Any) -> None:
    from onnx import numpy_helper

    weights[name].CopyFrom(numpy_helper.from_array(value, name))


def _padded(a: Any, axis: int) -> Any:
    """``a`` with zeros appended along ``axis`` up to a multiple of `COLUMN_MULTIPLE`."""
    import numpy as np

    widths = [(0, 0)] * a.ndim
    widths[axis] = (0, -a.shape[axis] % COLUMN_MULTIPLE)
    return np.pad(a, widths)


def _complement(indices: Any, size: int) -> Any:
    import numpy as np

    keep = np.ones(size, dtype=bool)
    keep[indices] = False
    return np.flatnonzero(keep)
