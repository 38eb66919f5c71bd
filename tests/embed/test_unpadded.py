"""The int8 graph's branch for unpadded inputs (`_unpadded`): the padding masks' Adds skipped when
nothing is padded, and the vectors those of the graph as the quantizer wrote it, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, model_dir
from querywise.embed._graph import bert_onnx
from querywise.embed._onnx import _quantize_spec
from querywise.embed._quantize import quantize
from querywise.embed._unpadded import MASK, branch_unpadded
from tests.conftest import both_ways

# One word to past the 256-token window: batches of them are padded, and one text is cut.
TEXTS = [
    "Warranty",
    "Are the Halcyon 300 headphones foldable?",
    "Orders placed before 3 pm ship the same working day; weekend orders leave on Monday.",
    "The ear pads on my over-ear headphones are peeling after eight months, is that covered?",
    "Returned headphones must include the charging cable, the carry case and the original box. " * 30,
]


@pytest.fixture(scope="module")
def int8_pair() -> tuple[bytes, bytes]:
    """The default int8 recipe quantized as the embedder gets it (branched) and as the quantizer
    wrote it (not)."""
    fp32, spec = bert_onnx(model_dir()), _quantize_spec(INT8_VARIANTS[INT8_DEFAULT])
    return quantize(fp32, **spec), quantize(fp32, **spec, unpadded_branch=False)


@pytest.mark.model
def test_the_unpadded_branch_skips_every_layers_mask_add(int8_pair: tuple[bytes, bytes]) -> None:
    import onnx

    branched, plain = (onnx.load_model_from_string(m).graph for m in int8_pair)
    (chooser,) = [n for n in branched.node if n.op_type == "If"]
    then_, else_ = (onnx.helper.get_attribute_value(a) for a in sorted(chooser.attribute, key=lambda a: a.name != "then_branch"))
    adds = [sum(n.op_type == "Add" for n in g.node) for g in (plain, then_, else_)]
    assert adds[0] == adds[1] == adds[2] + 6  # the padded side as written; one mask Add a layer gone
    assert not any(MASK in n.input or MASK in n.output for n in else_.node)
    assert branch_unpadded(onnx.load_model_from_string(int8_pair[0])) == 0  # branched once only


@pytest.mark.model
def test_texts_alone_and_padded_batches_get_the_quantizers_vectors_bit_for_bit(int8_pair: tuple[bytes, bytes]) -> None:
    branched, plain = int8_pair
    for a, b in both_ways(branched, plain, TEXTS):
        assert np.array_equal(a, b)


def test_a_graph_without_the_mask_or_already_branched_is_left_as_it_is() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    model = helper.make_model(helper.make_graph([helper.make_node("Add", ["attention_mask", "attention_mask"], ["y"])], "g", [x], [y]))
    before = model.SerializeToString()
    assert branch_unpadded(model) == 0
    assert model.SerializeToString() == before
