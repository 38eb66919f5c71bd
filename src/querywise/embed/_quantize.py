"""ONNX Runtime's dynamic quantization of the fp32 export, in or out of process.

    python -P .../_quantize.py FP32.onnx OUT.onnx RECIPE_JSON   # a child of `_onnx.export_int8_onnx`
    python -P .../_quantize.py --from-weights MODEL_FOLDER FP32_OUT.onnx OUT.onnx RECIPE_JSON   # a cold start: export too

Imports nothing of querywise, so the child runs by path without loading the package (0.6 CPU s
of imports the quantizer does not need), and the parent never loads onnx or the quantizer: the
model's protobuf and the quantizer's copies live and die in the child.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

__all__ = ["quantize"]

_WEIGHT_SUFFIX = ".weight_t"  # how `_graph` names a Linear's transposed weight
FROM_WEIGHTS = "--from-weights"  # `main`'s first argument when it exports the model itself


def quantize(
    fp32: bytes, *, per_channel: bool, reduce_range: bool, fp32_matmuls: Sequence[str],
    outlier_ratio: float = 0.0, outlier_split: float = 0.0, split_matmuls: Sequence[str] = (), int8_embeddings: bool = True,
    calibration_ids: Sequence[Sequence[int]] = (), unpadded_branch: bool = True, outlier_columns_apart: bool = True,
    heads_in_place: bool = True,
) -> bytes:
    """``fp32`` with int8 weights (`quantize_dynamic`: activations quantized per call), one scale
    per output channel or per tensor, 7-bit weights with ``reduce_range``; the MatMuls named in
    ``fp32_matmuls`` (by their weight, e.g. ``"encoder.layer.0.output.dense"``) stay fp32. With
    ``outlier_ratio`` above 0, the activations' outlier channels (measured on ``calibration_ids``)
    are first divided into the weights (`_smooth.smooth_outliers`), except those of the MatMuls
    named in ``split_matmuls``: with ``outlier_split`` above 0, theirs are multiplied in fp32
    MatMuls of their own (`_smooth.split_outliers`). Without
    ``int8_embeddings`` only MatMuls are quantized: the embedding tables' Gathers stay fp32. With
    ``unpadded_branch`` the graph skips its padding masks' Adds when nothing is padded (`_unpadded`:
    the same vectors), and with ``heads_in_place`` too that branch's attention reads the heads
    where the projections wrote them, for one text (`_attention`: the same vectors). With
    ``outlier_columns_apart`` the split outlier channels are computed by MatMuls of their own
    rather than masked and gathered (`_ffn`: the same vectors, less work)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load_model_from_string(fp32)
    named = _name_weight_matmuls(model)
    unknown = sorted((set(fp32_matmuls) | set(split_matmuls)) - named)
    if unknown:  # a typo would silently quantize everything
        raise ValueError(f"no MatMul with the weight {', '.join(unknown)} in the model")
    outliers = _sibling("_smooth")
    split = split_matmuls if outlier_split > 0 else ()
    if outlier_ratio > 0 and split:
        outliers.smooth_then_split(model, outlier_ratio, outlier_split, calibration_ids, split=split)
    elif outlier_ratio > 0:
        outliers.smooth_outliers(model, outlier_ratio, calibration_ids, skip=split)
    elif split:
        outliers.split_outliers(model, outlier_split, calibration_ids, only=split)
    if split:
        if outlier_columns_apart:
            _sibling("_ffn").separate_outlier_columns(model)
    sides = [n.name for n in model.graph.node if n.name.endswith(outliers.SIDE_SUFFIX)]
    # The quantizer's default also stores Gathers' tables in int8 (one scale per table): nothing
    # faster, and the token and position embeddings then carry their rounding into every layer.
    only = {} if int8_embeddings else {"op_types_to_quantize": ["MatMul"]}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "int8.onnx"
        with _root_logger_quiet(), _sibling("_per_channel").per_channel_at_once():  # the quantizer advises pre-processing on the root logger; a library does not print
            quantize_dynamic(model, out, weight_type=QuantType.QInt8, per_channel=per_channel,
                             reduce_range=reduce_range, nodes_to_exclude=[*fp32_matmuls, *sides], **only)
        if not unpadded_branch:
            return out.read_bytes()
        quantized = onnx.load_model(out)
    _sibling("_unpadded").branch_unpadded(quantized)
    if heads_in_place:
        _sibling("_attention").heads_in_place(quantized)
    data: bytes = quantized.SerializeToString()
    return data


def _name_weight_matmuls(model: onnx.ModelProto) -> set[str]:
    """Name each MatMul by its weight (``<prefix>.weight_t`` -> ``<prefix>``), as the quantizer's
    ``nodes_to_exclude`` reads names: the exported graph leaves its nodes unnamed. The names given."""
    weights = {i.name for i in model.graph.initializer}
    names: set[str] = set()
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.input[1] in weights and node.input[1].endswith(_WEIGHT_SUFFIX):
            node.name = node.input[1].removesuffix(_WEIGHT_SUFFIX)
            names.add(node.name)
    return names


def _sibling(name: str) -> ModuleType:
    """The module ``name`` beside this file, imported by path: run as a child, this file is not
    inside the package, so a relative import has nothing to import from (and ``-P`` keeps its
    folder off sys.path). The sibling must import nothing of querywise either."""
    spec = importlib.util.spec_from_file_location(f"querywise_embed{name}", Path(__file__).with_name(f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"{name}.py not found beside {__file__}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: what the module defines may look itself up
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def _root_logger_quiet() -> Iterator[None]:
    def drop(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR

    root = logging.getLogger()
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)


def main(argv: list[str]) -> None:
    """Quantize the file ``argv[0]`` into ``argv[1]`` as the JSON recipe ``argv[2]`` says; or, with
    ``FROM_WEIGHTS FOLDER FP32_OUT OUT RECIPE``, first write the ONNX graph of the model in FOLDER
    (`_graph.bert_onnx`, as `_export.py` does) to FP32_OUT, and quantize those bytes."""
    if argv[0] == FROM_WEIGHTS:
        folder, fp32_out, out, recipe = Path(argv[1]), Path(argv[2]), Path(argv[3]), json.loads(argv[4])
        fp32 = _sibling("_graph").bert_onnx(folder)
        fp32_out.write_bytes(fp32)
    else:
        fp32, out, recipe = Path(argv[0]).read_bytes(), Path(argv[1]), json.loads(argv[2])
    out.write_bytes(quantize(fp32, **recipe))


if __name__ == "__main__":
    main(sys.argv[1:])
