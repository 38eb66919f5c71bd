"""A cold int8 start's quantization, made cheaper without changing a byte: the per-channel weights
computed at once (`_per_channel`) equal ORT's channel-by-channel loop, smoothing and splitting
share one calibration run (`_smooth.smooth_then_split`), and the export and the quantization in
one child write the files the two children wrote."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest

from querywise.embed import INT8_VARIANTS, model_dir, quantize_int8
from querywise.embed import _quantize as quantize_module
from querywise.embed._per_channel import per_channel_at_once


def _matmul_model(weight: np.ndarray) -> Any:
    """x @ weight, the weight an initializer: the shape of a quantized Linear."""
    from onnx import TensorProto, helper, numpy_helper

    k, n = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="linear")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", k])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", n])],
        initializer=[numpy_helper.from_array(weight.astype(np.float32), "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _quantized(weight: np.ndarray, tmp_path: Path, *, at_once: bool, reduce_range: bool = False) -> bytes:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = tmp_path / f"q-{at_once}-{reduce_range}.onnx"
    with per_channel_at_once() if at_once else contextlib.nullcontext():
        quantize_dynamic(_matmul_model(weight), out, weight_type=QuantType.QInt8, per_channel=True, reduce_range=reduce_range)
    return out.read_bytes()


def _edge_weights() -> np.ndarray:
    """One column per case ORT's `compute_scale_zp` and `quantize_nparray` treat apart."""
    rng = np.random.default_rng(7)
    k = 64
    columns = [
        rng.normal(0, 0.05, k),  # an ordinary channel
        np.zeros(k),  # all zero: scale 1, every value 0
        np.full(k, 0.3),  # constant, positive: the range widened to hold 0
        np.full(k, -2.5),  # constant, negative
        np.full(k, 1e-40),  # subnormal: the scale falls below float32's smallest normal, becomes 1
        rng.uniform(-1e-36, 1e-36, k),  # a tiny range whose scale underflows too
        rng.uniform(-1e-30, 1e-30, k),  # a tiny range that still has its own scale
        np.r_[rng.normal(0, 0.01, k - 1), 40.0],  # one outlier sets the scale for the rest
        np.r_[np.arange(-(k // 2), k // 2) * (1.0 / 254.0) * 0.5],  # halves: round half to even
        -np.abs(rng.normal(0, 1.0, k)),  # all negative
    ]
    return np.stack(columns, axis=1).astype(np.float32)


@pytest.mark.parametrize("reduce_range", [False, True])
def test_weights_quantized_at_once_are_the_bytes_of_orts_channel_loop_at_the_edges(tmp_path: Path, reduce_range: bool) -> None:
    weight = _edge_weights()
    assert _quantized(weight, tmp_path, at_once=True, reduce_range=reduce_range) == _quantized(weight, tmp_path, at_once=False, reduce_range=reduce_range)


def test_a_case_it_does_not_handle_falls_back_to_orts_loop(tmp_path: Path) -> None:
    """A weight with a NaN is left to ORT's own loop, which refuses it as it did before."""
    weight = _edge_weights()
    weight[3, 0] = np.nan
    for at_once in (True, False):
        with pytest.raises(AssertionError, match="scale issue"):
            _quantized(weight, tmp_path, at_once=at_once)


def test_the_patch_is_undone_after_the_block() -> None:
    from onnxruntime.quantization.base_quantizer import BaseQuantizer

    original = BaseQuantizer.quantize_weight_per_channel_impl
    with per_channel_at_once():
        assert BaseQuantizer.quantize_weight_per_channel_impl is not original
    assert BaseQuantizer.quantize_weight_per_channel_impl is original


@pytest.fixture(scope="module")
def fp32_graph() -> bytes:
    from querywise.embed._graph import bert_onnx

    return bert_onnx(model_dir())


@contextlib.contextmanager
def _as_before(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`_quantize` as before cold-window: ORT's own per-channel loop, and the smoothed model
    measured again for the split."""
    sibling = quantize_module._sibling

    def before(name: str) -> ModuleType | SimpleNamespace:
        if name == "_per_channel":
            return SimpleNamespace(per_channel_at_once=contextlib.nullcontext)
        module = sibling(name)
        if name == "_smooth":
            def two_runs(model: Any, smooth: float, split_ratio: float, ids: Any, *, split: Any) -> tuple[int, int]:
                return module.smooth_outliers(model, smooth, ids, skip=split), module.split_outliers(model, split_ratio, ids, only=split)

            module.smooth_then_split = two_runs
        return module

    with monkeypatch.context() as m:
        m.setattr(quantize_module, "_sibling", before)
        yield


@pytest.mark.model
@pytest.mark.parametrize("variant", ["split", "smoothed", "per-channel"])
def test_the_packaged_models_int8_file_is_byte_identical_to_before(fp32_graph: bytes, variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the real weights (20,832 channels for the default): the int8 file, every byte."""
    fast = quantize_int8(fp32_graph, INT8_VARIANTS[variant])
    with _as_before(monkeypatch):
        assert quantize_int8(fp32_graph, INT8_VARIANTS[variant]) == fast


def test_a_channel_near_the_split_threshold_has_the_smoothed_model_measured_again() -> None:
    """The shared maxima stand in only when every channel is clear of the threshold by more than
    smoothing moves it; one at it (or within the margin) asks for the second run."""
    from querywise.embed._smooth import SHARED_MARGIN, _clear_of

    peak = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 5.0], dtype=np.float32)  # median 1.0 (with one more too): threshold 2.0 at ratio 2
    assert _clear_of(peak, 2.0)
    assert not _clear_of(np.r_[peak, np.float32(2.0)], 2.0)
    assert not _clear_of(np.r_[peak, np.float32(2.0 * (1 + SHARED_MARGIN / 2))], 2.0)
    assert _clear_of(np.r_[peak, np.float32(2.0 * (1 + 10 * SHARED_MARGIN))], 2.0)


@pytest.mark.model
def test_a_cold_start_exports_and_quantizes_in_one_child_the_files_of_two(fp32_graph: bytes, tmp_path: Path) -> None:
    """With an empty cache the fp32 export and the int8 file are written by one child: the fp32 file
    is the export's bytes (an fp32 embedder reuses it), the int8 file the in-process quantizer's."""
    from querywise.embed._onnx import export_fp32_onnx, export_int8_onnx

    int8 = export_int8_onnx(tmp_path / "models", variant="split")
    assert isinstance(int8, Path)
    fp32 = export_fp32_onnx(tmp_path / "models")  # found, not made again
    assert isinstance(fp32, Path)
    assert fp32.read_bytes() == fp32_graph
    assert int8.read_bytes() == quantize_int8(fp32_graph, INT8_VARIANTS["split"])
    assert sorted(p.name.split("-")[4] for p in (tmp_path / "models").iterdir()) == ["fp32", "int8"]  # nothing else left


def test_the_one_childs_failure_is_reported_with_its_last_line(tmp_path: Path) -> None:
    """Weights the child cannot read: the build fails with what failed and the child's own error,
    and leaves no model file behind."""
    from querywise.embed._onnx import export_int8_onnx

    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"not a safetensors file")
    (folder / "config.json").write_text("{}")
    with pytest.raises(RuntimeError, match=r"^exporting .*broken to ONNX and quantizing it to int8 failed: \w+"):
        export_int8_onnx(tmp_path / "models", folder)
    assert not any((tmp_path / "models").glob("*.onnx"))
