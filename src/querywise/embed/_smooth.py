"""Outlier channels moved from a MatMul's activations into its weights, before int8 quantization.

    smooth_outliers(model, ratio=3.0)  # in place: the fp32 export, the same outputs

ONNX Runtime's dynamic quantization scales a MatMul's whole input by one uint8 scale per call
(per text, as `OnnxEmbedder.int8` runs it). BERT's LayerNorm and GELU outputs each have a few
channels whose values reach 10-30 where the median channel's reach about 2 (all-MiniLM-L6-v2, e.g.
the feed-forward inputs: largest channel 28.5, median 2.15), so one scale spends most of its 256
steps on those few channels and resolves the rest coarsely. Dividing channel j of the input by
s_j and multiplying row j of the weight by s_j leaves the product unchanged in fp32 (SmoothQuant's
equivalence); the weights are quantized per output channel, so their precision barely moves. Here
s_j only shrinks the outliers: s_j = max(1, max|x_j| / (ratio * median_j max|x_j|)), the channel
maxima measured on `CALIBRATION_TEXTS` (each text alone). The division is one Mul per group of
MatMuls sharing an input (query, key and value share one), a few microseconds against the MatMuls.

Chosen on SciFact's train-side texts (400 abstracts, 400 train claims; bench/results/int8-smooth.md):
mean 1 - cosine to fp32 0.0049 -> 0.0022 on abstracts and 0.0062 -> 0.0019 on claims at ratio 3,
at the same speed. The channel maxima from SmoothQuant's balance (alpha 0.75) agreed as well when
measured on SciFact texts but depended on the calibration set (handwritten short sentences: worse
than no smoothing on abstracts); shrinking only the outliers agreed as well with either set.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import onnx

__all__ = ["CALIBRATION_TEXTS", "SHARED_MARGIN", "SIDE_SUFFIX", "smooth_outliers", "smooth_then_split", "split_outliers"]

# Each tensor's largest |value| per channel (last axis), by the tensor's name.
Maxima = dict[str, npt.NDArray[np.float32]]

# How `split_outliers` names the fp32 MatMul it adds beside a quantized one (after the latter's
# weight): the quantizer is told to leave these in fp32.
SIDE_SUFFIX = ".outlier_side"

# Written for this purpose (no benchmark collection's text): which channels are outliers is a
# property of the model, seen in any English; mixed lengths, questions, statements and fragments.
CALIBRATION_TEXTS: Final[tuple[str, ...]] = (
    "How do I reset my password if I no longer have access to the email address on my account?",
    "Where is my parcel? The tracking page has said 'in transit' for six days.",
    "Can I change the delivery address after the order has shipped?",
    "The app crashes every time I open the settings page on my phone.",
    "What is the difference between a savings account and a current account?",
    "Cancel my subscription and refund the last payment, please.",
    "Is it safe to take ibuprofen together with paracetamol for a fever?",
    "Regular exercise lowers blood pressure in adults with mild hypertension.",
    "The protein is expressed mainly in the liver and is regulated by insulin signalling.",
    "We measured the expression of twelve genes in tumour samples from 240 patients and found no association with survival.",
    "Mice lacking the receptor gained less weight on a high-fat diet than their wild-type littermates.",
    "A randomized controlled trial compared two doses of the vaccine in children under five years of age.",
    "Vitamin D supplementation did not reduce the risk of fractures in elderly women.",
    "Antibiotic resistance is spreading faster in hospitals than in the community.",
    "The committee will meet on Thursday to discuss the budget for next year.",
    "Heavy rain caused flooding in several towns along the river, and roads were closed overnight.",
    "The central bank raised interest rates by a quarter of a point to curb inflation.",
    "She played the violin in the city orchestra for almost twenty years before she retired.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The bridge was built in 1887 and was the longest of its kind at the time.",
    "Add two cups of flour, a pinch of salt and the melted butter, then stir until smooth.",
    "To renew a passport you need the old passport, two recent photos and the completed form.",
    "Students who apply before March receive a decision by the end of April.",
    "Our office is open Monday to Friday from 9 am to 5 pm, except on public holidays.",
    "What does the error 'permission denied' mean when I run the install script?",
    "Set the timeout to 30 seconds in the configuration file and restart the service.",
    "The function returns None when the list is empty, which breaks the caller.",
    "I was charged twice for the same order. Who can I talk to about it?",
    "and what about the other one?",
    "ok thanks, that worked",
    "Does the warranty cover water damage?",
    "Children who slept less than eight hours scored lower on attention tests.",
    "The patient presented with chest pain radiating to the left arm and shortness of breath.",
    "Long-term use of proton pump inhibitors has been linked to lower magnesium levels.",
    "Under the new rules, landlords must give tenants two months' notice before raising the rent.",
    "The survey of 3,000 households found that energy costs had doubled since 2020.",
    "If you are a veteran, you may be eligible for additional education benefits.",
    "Temperature, humidity and wind speed were recorded every ten minutes at each station.",
    "Please describe the symptoms, when they started and any medicines you are taking.",
    "The novel follows a family over three generations as they move from the countryside to the city.",
)


def smooth_outliers(
    model: onnx.ModelProto, ratio: float, token_ids: Sequence[Sequence[int]], *, skip: Collection[str] = (), maxima: Maxima | None = None
) -> int:
    """Rewrite ``model`` (a `_graph.bert_onnx` export) in place so that every MatMul by a weight
    reads its input with the outlier channels divided down to ``ratio`` times the median channel's
    maximum, and multiplies by correspondingly scaled-up weight rows: the same function in fp32.
    Channel maxima are measured by running the model on ``token_ids`` (each a tokenized text,
    special tokens included), one text at a time. MatMuls named in ``skip`` are left as they are
    (with every MatMul that reads the same input); ``maxima``: the channel maxima already measured
    on this model (`smooth_then_split`). The number of channels scaled."""
    from onnx import helper, numpy_helper

    if ratio <= 0:
        raise ValueError(f"ratio must be positive, not {ratio}")
    weights, groups = _weight_matmuls(model, lambda users: not any(u.name in skip for u in users))
    maxima = maxima if maxima is not None else _channel_maxima(model, list(groups), token_ids)
    scaled, divisions = 0, {}
    for source, users in groups.items():
        peak = np.maximum(maxima[source], 1e-6)
        s = np.maximum(1.0, peak / (ratio * float(np.median(peak)))).astype(np.float32)
        if not np.any(s > 1.0):
            continue
        scaled += int(np.sum(s > 1.0))
        # Not "<reduced>_scale": the quantizer names its own tensors so, and a clash makes a cycle.
        reduced, reciprocals = f"{source}_shrunk", f"{source}_outlier_reciprocals"
        model.graph.initializer.append(numpy_helper.from_array((1.0 / s).astype(np.float32), reciprocals))
        for user in users:
            w = numpy_helper.to_array(weights[user.input[1]])
            weights[user.input[1]].CopyFrom(numpy_helper.from_array((w * s[:, None]).astype(np.float32), user.input[1]))
            user.input[0] = reduced
        divisions[source] = helper.make_node("Mul", [source, reciprocals], [reduced])
    _insert_after(model, {source: [node] for source, node in divisions.items()})
    return scaled


def split_outliers(
    model: onnx.ModelProto, ratio: float, token_ids: Sequence[Sequence[int]], *, only: Collection[str], maxima: Maxima | None = None
) -> int:
    """Rewrite ``model`` in place so that every MatMul by a weight multiplies its input's outlier
    channels (maximum above ``ratio`` times the median channel's, measured on ``token_ids`` as in
    `smooth_outliers`) in an fp32 MatMul of their own, named after its weight + `SIDE_SUFFIX`,
    and the other channels in the original MatMul (the outliers zeroed in its input and weight),
    the two added: the same function in fp32 (LLM.int8()'s decomposition). Quantized, the int8
    MatMul's one activation scale then spans the ordinary channels only, and no weight row is
    scaled up as smoothing does. Only the MatMuls named in ``only`` (and those sharing their
    input): each split adds a full-size Add, which costs about a third of an int8 MatMul, so it
    pays only where the error is (bench/results/int8-split.md). ``maxima`` as in `smooth_outliers`.
    The number of channels split off."""
    from onnx import helper, numpy_helper

    if ratio <= 0:
        raise ValueError(f"ratio must be positive, not {ratio}")
    weights, groups = _weight_matmuls(model, lambda users: any(u.name in only for u in users))
    maxima = maxima if maxima is not None else _channel_maxima(model, list(groups), token_ids)
    split, after_source, after_user = 0, {}, {}
    for source, users in groups.items():
        peak = maxima[source]
        outliers = np.flatnonzero(peak > ratio * float(np.median(peak)))
        if outliers.size == 0:
            continue
        split += int(outliers.size)
        keep = np.ones(peak.shape, dtype=np.float32)
        keep[outliers] = 0.0
        # Not "<inliers>_scale": the quantizer names its own tensors so, and a clash makes a cycle.
        inliers, gathered = f"{source}_inliers", f"{source}_outliers"
        model.graph.initializer.append(numpy_helper.from_array(keep, f"{source}_inlier_mask"))
        model.graph.initializer.append(numpy_helper.from_array(outliers.astype(np.int64), f"{source}_outlier_index"))
        after_source[source] = [helper.make_node("Mul", [source, f"{source}_inlier_mask"], [inliers]),
                                helper.make_node("Gather", [source, f"{source}_outlier_index"], [gathered], axis=-1)]
        for user in users:
            w = numpy_helper.to_array(weights[user.input[1]])
            side_weight, out = f"{user.input[1]}_outlier_rows", user.output[0]
            model.graph.initializer.append(numpy_helper.from_array(w[outliers].astype(np.float32), side_weight))
            inner = w.copy()
            inner[outliers] = 0.0  # zero rows: the per-channel weight scales ignore the moved rows
            weights[user.input[1]].CopyFrom(numpy_helper.from_array(inner.astype(np.float32), user.input[1]))
            user.input[0], user.output[0] = inliers, f"{out}_ordinary"
            after_user[user.output[0]] = [
                helper.make_node("MatMul", [gathered, side_weight], [f"{out}_outlying"], name=user.input[1] + SIDE_SUFFIX),
                helper.make_node("Add", [f"{out}_ordinary", f"{out}_outlying"], [out]),
            ]
    _insert_after(model, after_source | after_user)
    return split


def smooth_then_split(
    model: onnx.ModelProto, smooth_ratio: float, split_ratio: float, token_ids: Sequence[Sequence[int]], *, split: Collection[str]
) -> tuple[int, int]:
    """`smooth_outliers` (``split`` skipped), then `split_outliers` (only ``split``), from one
    calibration run of the model where the two runs would choose the same: the channels scaled, the
    channels split off. Smoothing leaves the split MatMuls' inputs the same function, but not the
    same float32 bits (on the packaged model their channel maxima moved by at most 6.5e-6 of
    themselves), and splitting only asks which channels pass ``split_ratio`` times the median: the
    maxima measured before smoothing choose the same channels unless one of them lies within
    `SHARED_MARGIN` of that threshold (then the smoothed model is measured again, as before). One
    ONNX Runtime session and 40 texts run instead of two (0.45 CPU s of a cold start's quantization)."""
    _, every = _weight_matmuls(model, lambda users: True)
    maxima = _channel_maxima(model, list(every), token_ids)
    smoothed = smooth_outliers(model, smooth_ratio, token_ids, skip=split, maxima=maxima)
    _, splits = _weight_matmuls(model, lambda users: any(u.name in split for u in users))
    clear = all(_clear_of(maxima[source], split_ratio) for source in splits)
    return smoothed, split_outliers(model, split_ratio, token_ids, only=split, maxima=maxima if clear else None)


# How far (relative) every channel maximum must lie from the split's threshold for the maxima
# measured before smoothing to stand for those after: 15 times the largest move seen (6.5e-6).
SHARED_MARGIN = 1e-4


def _clear_of(peak: npt.NDArray[np.float32], ratio: float) -> bool:
    """Whether no channel of ``peak`` lies within `SHARED_MARGIN` of ``ratio`` times its median."""
    threshold = ratio * float(np.median(peak))
    return bool(np.all(np.abs(peak.astype(np.float64) - threshold) > SHARED_MARGIN * threshold))


def _weight_matmuls(
    model: onnx.ModelProto, wanted: Callable[[list[onnx.NodeProto]], bool]
) -> tuple[dict[str, onnx.TensorProto], dict[str, list[onnx.NodeProto]]]:
    """The model's initializers by name, and its MatMuls by a weight grouped by the input they
    read: the groups ``wanted`` accepts."""
    weights = {i.name: i for i in model.graph.initializer}
    groups: dict[str, list[onnx.NodeProto]] = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights:
            groups.setdefault(node.input[0], []).append(node)
    return weights, {source: users for source, users in groups.items() if wanted(users)}


def _insert_after(model: onnx.ModelProto, added: dict[str, list[onnx.NodeProto]]) -> None:
    """Put the nodes ``added[name]`` right after the node that outputs ``name``: still sorted.
    All at once, after every edit: rewriting the node list copies the nodes, and edits to nodes
    made after that would no longer reach the graph."""
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        for o in node.output:
            nodes += added.get(o, [])
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _channel_maxima(model: onnx.ModelProto, names: list[str], token_ids: Sequence[Sequence[int]]) -> Maxima:
    """The largest |value| of each channel (last axis) of the tensors ``names`` over ``token_ids``."""
    import onnx
    import onnxruntime as ort
    from onnx import helper

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    out: dict[str, npt.NDArray[np.float32]] = {}
    for ids in token_ids:
        batch = np.array([list(ids)], dtype=np.int64)
        feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch), "token_type_ids": np.zeros_like(batch)}
        for name, value in zip(names, session.run(names, {k: v for k, v in feeds.items() if k in inputs}), strict=True):
            peak = np.abs(np.asarray(value, dtype=np.float32)).reshape(-1, value.shape[-1]).max(axis=0)
            out[name] = np.maximum(out[name], peak) if name in out else peak
    return out
