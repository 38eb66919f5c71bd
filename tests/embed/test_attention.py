"""The int8 graph's attention reading the heads in place (`_attention`): fewer Transposes in the
branch a text alone takes, the vectors of the graph before bit for bit, and every other input
(padded, or several texts) on the masked branch."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, model_dir
from querywise.embed._attention import heads_in_place
from querywise.embed._graph import bert_onnx
from querywise.embed._onnx import _quantize_spec
from querywise.embed._quantize import quantize
from tests.conftest import both_ways

TEXTS = [
    "Warranty",
    "Are the Halcyon 300 headphones foldable?",
    "Orders placed before 3 pm ship the same working day; weekend orders leave on Monday.",
    "The ear pads on my over-ear headphones are peeling after eight months, is that covered?",
    "Returned headphones must include the charging cable, the carry case and the original box. " * 30,  # cut at 256 tokens
]
LAYERS = 6  # all-MiniLM-L6-v2


@pytest.fixture(scope="module")
def int8_pair() -> tuple[bytes, bytes]:
    """The default int8 recipe as the embedder gets it (heads in place) and as it was before (not)."""
    fp32, spec = bert_onnx(model_dir()), _quantize_spec(INT8_VARIANTS[INT8_DEFAULT])
    return quantize(fp32, **spec), quantize(fp32, **spec, heads_in_place=False)


def _branches(model: bytes) -> tuple[Counter[str], Counter[str]]:
    """Operator counts of the If's masked and unpadded branches."""
    import onnx

    (chooser,) = [n for n in onnx.load_model_from_string(model).graph.node if n.op_type == "If"]
    graphs = {a.name: onnx.helper.get_attribute_value(a) for a in chooser.attribute}
    return Counter(n.op_type for n in graphs["then_branch"].node), Counter(n.op_type for n in graphs["else_branch"].node)


@pytest.mark.model
def test_the_unpadded_branch_keeps_one_transpose_a_layer_and_the_masked_branch_is_untouched(int8_pair: tuple[bytes, bytes]) -> None:
    (masked, unpadded), (masked_before, unpadded_before) = (_branches(m) for m in int8_pair)
    assert masked == masked_before
    assert unpadded_before["Transpose"] == 4 * LAYERS and unpadded["Transpose"] == LAYERS
    assert unpadded["FusedMatMul"] == 2 * LAYERS and unpadded["Softmax"] == LAYERS
    assert unpadded["MatMul"] == unpadded_before["MatMul"] - 2 * LAYERS  # Q·K^T and scores·V; the split's fp32 side products stay


@pytest.mark.model
def test_texts_alone_padded_batches_and_batches_of_several_get_the_vectors_before_bit_for_bit(int8_pair: tuple[bytes, bytes]) -> None:
    import onnxruntime as ort

    in_place, before = int8_pair
    for a, b in both_ways(in_place, before, TEXTS):
        assert np.array_equal(a, b)
    # Two texts of one length, nothing padded: the heads of one text are not the batch's, so the If must mask.
    ids = np.array([[101, 2024, 1996, 7987, 102], [101, 2129, 2079, 1045, 102]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    hidden = [ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(["last_hidden_state"], feeds)[0] for m in int8_pair]
    assert hidden[0].shape == (2, 5, 384) and np.array_equal(hidden[0], hidden[1])


def test_a_graph_without_the_unpadded_branch_is_left_as_it_is() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    model = helper.make_model(helper.make_graph([helper.make_node("Softmax", ["x"], ["y"])], "g", [x], [y]))
    before = model.SerializeToString()
    assert heads_in_place(model) == 0
    assert model.SerializeToString() == before
