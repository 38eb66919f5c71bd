"""The ONNX graph written from the packaged weights: the plain graph the embedder runs, the fused
alternative the efficiency benchmark measures, and the export cache's name."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from querywise.embed import OnnxEmbedder, model_dir
from querywise.embed._graph import bert_onnx
from querywise.embed._onnx import _EXPORT_RECIPE

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

# The sha256 of the file each export recipe writes for the packaged model. The recipe is part of
# the cached file's name: a graph that changes without a new recipe would be served from caches
# written by older code.
GRAPH_SHA256 = {"2": "d31011999876cbf80fe8369f5f823e4d7e1c11ee2b367313deeeefecd3cbb602"}


@pytest.mark.model
def test_the_fused_graph_embeds_as_the_plain_one_whatever_the_batch() -> None:
    folder = model_dir()
    plain = OnnxEmbedder(bert_onnx(folder), model_id="plain", batch_size=4)
    fused = OnnxEmbedder(bert_onnx(folder, fused=True), model_id="fused", batch_size=4)
    a, b = plain.embed(TEXTS), fused.embed(TEXTS)
    assert np.sum(a * b, axis=1).min() >= 1 - 1e-6
    np.testing.assert_allclose(b, a, atol=1e-6)
    # Alone (no padding) and in a padded batch, the fused graph gives a text the same vector.
    alone = np.vstack([fused.embed([t]) for t in TEXTS])
    np.testing.assert_allclose(alone, b, atol=1e-6)


@pytest.mark.model
def test_the_graph_written_is_the_one_its_export_recipe_names() -> None:
    digest = hashlib.sha256(bert_onnx(model_dir())).hexdigest()
    assert digest == GRAPH_SHA256.get(_EXPORT_RECIPE), (
        f"the graph changed ({digest}): bump _EXPORT_RECIPE in embed/_onnx.py so cached exports of the "
        "old graph are not reused, and record the new digest here"
    )
