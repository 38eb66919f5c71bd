"""ONNX Runtime's per-channel weight quantization, one array operation per weight instead of a
Python loop per output channel, the same bytes.

    with per_channel_at_once():
        quantize_dynamic(model, out, per_channel=True, weight_type=QuantType.QInt8)

ORT's `BaseQuantizer.quantize_weight_per_channel_impl` calls `quantize_data` once per channel:
20,832 calls for all-MiniLM-L6-v2's MatMuls, 1.31 of a cold int8 build's 2.8-3.0 quantization CPU
seconds, nearly all of it numpy's per-call overhead. This replacement computes the same scale,
zero point and int8 values with the same float32/float64 operations (`compute_scale_zp` for
symmetric int8 weights, then `quantize_nparray`'s divide, round half to even, add, clip), applied
to the whole weight at once: elementwise IEEE operations round the same whether applied to one
channel or to all (tests/embed/test_cold_quantize.py checks the bytes on the real weights and on
edge cases). Only the case the embedder uses is replaced (int8 weights, symmetric, no per-tensor
overrides, no minimum range, float32 finite weights); any other falls back to ORT's own loop.

Imports nothing of querywise: `_quantize` loads it by path in its child.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["per_channel_at_once", "scales_and_values"]


def scales_and_values(
    weights: npt.NDArray[np.float32], axis: int, qmin: int, qmax: int
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8], npt.NDArray[np.int8]]:
    """Each channel's scale and zero point along ``axis`` and the int8 weights, as ORT's
    `quantize_data(channel, INT8, symmetric=True)` computes them channel by channel with the
    symmetric range [``qmin``, ``qmax``] (-127, 127; -64, 64 with reduce_range)."""
    moved = np.moveaxis(weights, axis, 0).reshape(weights.shape[axis], -1)
    zero = np.float32(0)
    # compute_scale_zp: the range widened to hold 0, made symmetric, in the weights' float32 ...
    rmin = np.minimum(moved.min(axis=1), zero)
    rmax = np.maximum(moved.max(axis=1), zero)
    absmax = np.maximum(np.abs(rmin), np.abs(rmax))
    # ... then its width over the integer range's in float64, stored as float32; a scale below
    # float32's smallest normal becomes 1 with a zero point of 0 (an all-zero channel, a tiny one).
    scale64 = (absmax.astype(np.float64) - (-absmax).astype(np.float64)) / (np.float64(qmax) - np.float64(qmin))
    tiny = scale64 < np.finfo(np.float32).tiny
    scales = np.where(tiny, np.float32(1.0), scale64.astype(np.float32)).astype(np.float32)
    # The symmetric zero point is round((qmin + qmax) / 2): 0 for both ranges ORT uses here.
    zero_points = np.full(scales.shape, np.round((qmin + qmax) / 2.0), dtype=np.int8)
    # quantize_nparray: divide in float32, round half to even, add the zero point, clip to the
    # type's full range (-128, 127: not the symmetric one), cast.
    q = np.round(moved / scales[:, None]) + zero_points[:, None].astype(np.float32)
    np.clip(q, -128, 127, out=q)
    values = np.moveaxis(q.astype(np.int8).reshape([weights.shape[axis], *np.delete(weights.shape, axis)]), 0, axis)
    return scales, zero_points, np.ascontiguousarray(values)


@contextlib.contextmanager
def per_channel_at_once() -> Iterator[None]:
    """ORT's quantizers quantize per-channel weights with `scales_and_values` while inside."""
    from onnxruntime.quantization.base_quantizer import BaseQuantizer

    original = BaseQuantizer.quantize_weight_per_channel_impl

    def at_once(self: Any, weight_name: str, weight_qtype: int, channel_axis: int, reduce_range: bool = True, keep_float_weight: bool = False) -> Any:
        done = _at_once(self, weight_name, weight_qtype, channel_axis, reduce_range, keep_float_weight)
        return done if done is not None else original(self, weight_name, weight_qtype, channel_axis, reduce_range, keep_float_weight)

    BaseQuantizer.quantize_weight_per_channel_impl = at_once
    try:
        yield
    finally:
        BaseQuantizer.quantize_weight_per_channel_impl = original


def _at_once(quantizer: Any, weight_name: str, weight_qtype: int, channel_axis: int, reduce_range: bool, keep_float_weight: bool) -> tuple[str, str, str] | None:
    """`quantize_weight_per_channel_impl`'s work on ``quantizer`` when it is the plain case (the
    names it returns), else None: ORT's loop then does it."""
    import onnx
    from onnxruntime.quantization.quant_utils import (
        TENSOR_NAME_QUANT_SUFFIX,
        find_by_name,
        get_qmin_qmax_for_qType,
        normalize_axis,
    )

    initializer = find_by_name(weight_name, quantizer.model.initializer())
    if initializer is None or initializer.data_type != onnx.TensorProto.FLOAT or weight_qtype != onnx.TensorProto.INT8:
        return None
    rank = len(initializer.dims)
    valid, axis = normalize_axis(channel_axis, rank)
    overrides = quantizer.tensor_quant_overrides.get_per_channel_overrides(weight_name, default_val=[{"axis": axis}])
    if not valid or overrides != [{"axis": axis}] or quantizer.min_real_range is not None or not quantizer.is_weight_symmetric(weight_qtype):
        return None
    weights = onnx.numpy_helper.to_array(initializer)
    if not np.all(np.isfinite(weights)):
        return None
    qmin, qmax = get_qmin_qmax_for_qType(weight_qtype, reduce_range=quantizer.reduce_range and reduce_range, symmetric=True)
    scales, zero_points, values = scales_and_values(weights, axis, int(qmin), int(qmax))
    q_name, zp_name, scale_name = weight_name + TENSOR_NAME_QUANT_SUFFIX, weight_name + "_zero_point", weight_name + "_scale"
    shape = [initializer.dims[axis]]
    # As ORT writes them: the scales and zero points as lists (float_data, int32_data), then the weights.
    quantizer.model.initializer_extend([
        onnx.helper.make_tensor(scale_name, initializer.data_type, shape, scales.tolist()),
        onnx.helper.make_tensor(zp_name, weight_qtype, shape, zero_points.tolist()),
    ])
    if not keep_float_weight:
        quantizer.model.initializer_extend([onnx.numpy_helper.from_array(values.reshape(initializer.dims), q_name)])
    return q_name, zp_name, scale_name
