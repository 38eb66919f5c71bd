"""The ONNX graph written from the packaged weights: the fused graph the embedder runs against the
plain one, and the export cache's names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from querywise.embed import OnnxEmbedder, export_fp32_onnx, export_int8_onnx, model_dir
from querywise.embed._graph import bert_onnx
from querywise.embed._onnx import _FP32_RECIPE, _INT8_SOURCE_RECIPE, _weights_key

# Lengths from one word to past the 256-token window, so batches are padded (the fused attention
# reads each text's length) and one text is cut.
TEXTS = [
    "Warranty",
    "Are the Halcyon 300 headphones foldable?",
    "Orders placed before 3 pm ship the same working day; weekend orders leave on Monday.",
    "The ear pads on my over-ear headphones are peeling after eight months, is that covered?",
    "Express shipping to Norway takes two to four days and costs extra because of customs checks "
    "at the border, which the carrier handles for you. " * 3,
    "Returned headphones must include the charging cable, the carry case and the original box. " * 30,
]


@pytest.mark.model
def test_the_fused_graph_embeds_as_the_plain_one_whatever_the_batch() -> None:
    folder = model_dir()
    plain = OnnxEmbedder(bert_onnx(folder, fused=False), model_id="plain", batch_size=4)
    fused = OnnxEmbedder(bert_onnx(folder, fused=True), model_id="fused", batch_size=4)
    a, b = plain.embed(TEXTS), fused.embed(TEXTS)
    assert np.sum(a * b, axis=1).min() >= 1 - 1e-6
    np.testing.assert_allclose(b, a, atol=1e-6)
    # Alone (no padding) and in a padded batch, the fused graph gives a text the same vector.
    alone = np.vstack([fused.embed([t]) for t in TEXTS])
    np.testing.assert_allclose(alone, b, atol=1e-6)


@pytest.mark.model
def test_the_fused_export_has_a_name_of_its_own_and_int8_keeps_its_name(tmp_path: Path) -> None:
    folder = model_dir()
    # An export written under the plain graph's recipe is never read as the fused one; an int8
    # file quantized from the plain graph (which the fused graph did not change) is still used.
    stale = tmp_path / f"all-MiniLM-L6-v2-fp32-{_weights_key(folder, _INT8_SOURCE_RECIPE)}.onnx"
    stale.write_bytes(b"not a model")
    int8 = tmp_path / f"all-MiniLM-L6-v2-int8-per-channel-{_weights_key(folder, _INT8_SOURCE_RECIPE)}.onnx"
    int8.write_bytes(b"made before")
    exported = export_fp32_onnx(tmp_path)
    assert isinstance(exported, Path) and exported != stale
    assert exported.name == f"all-MiniLM-L6-v2-fp32-{_weights_key(folder, _FP32_RECIPE)}.onnx"
    assert OnnxEmbedder(exported, model_id="fused").embed(["Warranty"]).shape == (1, 384)
    assert export_int8_onnx(tmp_path) == int8
    assert int8.read_bytes() == b"made before"
