"""The int8 variants of the ONNX embedder: each its own model id, and the MatMuls a recipe keeps
in fp32 left unquantized in the graph it writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from querywise.embed import INT8_DEFAULT, INT8_VARIANTS, Int8Recipe, int8_key, int8_model_id, model_dir, quantize_int8, same_vectors
from querywise.embed._graph import bert_onnx
from querywise.embed._onnx import ffn_output


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    """A model folder as `int8_key` reads it: its weights file."""
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    return tmp_path


def test_each_variant_has_its_own_model_id_so_vectors_of_another_are_refused(weights: Path) -> None:
    ids = {v: int8_model_id("all-MiniLM-L6-v2", int8_key(weights, r), v) for v, r in INT8_VARIANTS.items()}  # type: ignore[arg-type]
    assert len(set(ids.values())) == len(INT8_VARIANTS)
    assert ids[INT8_DEFAULT].startswith("all-MiniLM-L6-v2/onnx-int8-")
    assert ids["mixed"].startswith("all-MiniLM-L6-v2/onnx-int8-mixed-")
    assert ids["per-channel"].startswith("all-MiniLM-L6-v2/onnx-int8-per-channel-")  # the default has the plain name
    assert not same_vectors(ids[INT8_DEFAULT], ids["mixed"])
    assert not same_vectors(ids["per-channel"], ids["smoothed"])  # smoothing moves the vectors: another id
    assert not same_vectors(ids[INT8_DEFAULT], "all-MiniLM-L6-v2/onnx-fp32")
    assert same_vectors(ids["per-channel"], int8_model_id("all-MiniLM-L6-v2", int8_key(weights, Int8Recipe()), "per-channel"))
    ratio = INT8_VARIANTS["smoothed"].outlier_ratio
    assert same_vectors(ids["smoothed"], int8_model_id("all-MiniLM-L6-v2", int8_key(weights, Int8Recipe(outlier_ratio=ratio)), "smoothed"))


def test_a_new_export_quantizer_or_weights_give_the_int8_model_a_new_id(weights: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors of an int8 file made by an older recipe never meet fresh ones in the shared cache:
    the id (the cache's key, the manifest's embedder) changes with everything the vectors depend on."""
    recipe = INT8_VARIANTS["per-channel"]
    before = int8_key(weights, recipe)
    assert int8_key(weights, recipe) == before  # the same inputs, the same key
    changed = []
    with monkeypatch.context() as m:
        m.setattr("querywise.embed._onnx._EXPORT_RECIPE", "fp32 graph written another way")
        changed.append(int8_key(weights, recipe))
    with monkeypatch.context() as m:
        m.setattr("querywise.embed._onnx._QUANTIZE_RECIPE", "quantized or run another way")
        changed.append(int8_key(weights, recipe))
    with monkeypatch.context() as m:
        m.setattr("querywise.embed._onnx.UNFUSED", ())  # the session runs the graph with other fusions
        changed.append(int8_key(weights, recipe))
    with monkeypatch.context() as m:
        m.setattr("importlib.metadata.version", lambda name: "0.0.1")
        changed.append(int8_key(weights, recipe))
    changed.append(int8_key(weights, Int8Recipe(fp32_matmuls=(ffn_output(0),))))
    changed.append(int8_key(weights, Int8Recipe(outlier_ratio=3.5)))
    changed.append(int8_key(weights, Int8Recipe(outlier_split=3.0)))
    changed.append(int8_key(weights, Int8Recipe(int8_embeddings=False)))
    (weights / "model.safetensors").write_bytes(b"fine-tuned weights")
    changed.append(int8_key(weights, recipe))
    assert len({before, *changed}) == 1 + len(changed)
    old_id, new_ids = int8_model_id("all-MiniLM-L6-v2", before), [int8_model_id("all-MiniLM-L6-v2", k) for k in changed]
    assert not any(same_vectors(old_id, new) for new in new_ids)


def test_mixed_keeps_the_first_three_feed_forward_outputs_in_fp32() -> None:
    assert INT8_VARIANTS["mixed"].fp32_matmuls == tuple(ffn_output(i) for i in range(3))
    assert INT8_VARIANTS["mixed"].per_channel and not INT8_VARIANTS["mixed"].reduce_range


@pytest.fixture(scope="module")
def fp32_graph() -> bytes:
    return bert_onnx(model_dir())


def _nodes(graph: Any) -> list[Any]:
    """The graph's nodes and its branches': the int8 graph's nodes sit in the branches of one If
    (`_unpadded`), which read the outer weights."""
    import onnx

    branches = [onnx.helper.get_attribute_value(a) for n in graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    return [*graph.node, *(n for b in branches for n in _nodes(b))]


def _weights_by_op(data: bytes) -> dict[str, set[str]]:
    """The weight each MatMul / MatMulInteger multiplies by, by operator type (without the
    quantizer's suffix)."""
    import onnx

    graph = onnx.load_model_from_string(data).graph
    weights = {i.name for i in graph.initializer}
    out: dict[str, set[str]] = {"MatMul": set(), "MatMulInteger": set()}
    for node in _nodes(graph):
        if node.op_type in out and node.input[1] in weights:
            out[node.op_type].add(node.input[1].removesuffix("_quantized").removesuffix(".weight_t"))
    return out


@pytest.mark.model
def test_the_matmuls_a_recipe_names_stay_fp32_and_the_rest_are_int8(fp32_graph: bytes) -> None:
    everything = _weights_by_op(fp32_graph)["MatMul"]
    assert len(everything) == 36  # 6 layers: Q, K, V, attention output, FFN input and output
    mixed = _weights_by_op(quantize_int8(fp32_graph, INT8_VARIANTS["mixed"]))
    assert mixed["MatMul"] == {ffn_output(i) for i in range(3)}
    assert mixed["MatMulInteger"] == everything - mixed["MatMul"]
    per_channel = _weights_by_op(quantize_int8(fp32_graph, INT8_VARIANTS["per-channel"]))
    assert per_channel == {"MatMul": set(), "MatMulInteger": everything}


@pytest.mark.model
def test_a_name_the_model_does_not_have_is_refused_rather_than_quantized(fp32_graph: bytes) -> None:
    with pytest.raises(ValueError, match=r"encoder\.layer\.9\.output\.dense"):
        quantize_int8(fp32_graph, Int8Recipe(fp32_matmuls=(ffn_output(9),)))


@pytest.mark.model
def test_fp32_vectors_are_those_onnx_runtime_gives_with_every_fusion(fp32_graph: bytes) -> None:
    # The embedder turns one fusion off (SkipLayerNormalization: slow in the int8 graph); the fp32
    # graph never gets it, so the default embedder's vectors are what they were, bit for bit.
    import numpy as np
    import onnxruntime as ort

    from querywise.embed import OnnxEmbedder
    from querywise.embed._onnx import mean_pool_normalise

    embedder = OnnxEmbedder(fp32_graph, model_id="fp32", threads=1)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(fp32_graph, options, providers=["CPUExecutionProvider"])
    for text in ("Where is my parcel?", "Aspirin lowers the risk of a second heart attack in adults over 50. " * 8):
        ids = np.array([embedder._tokenizer.encode(text).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        (hidden,) = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        assert np.array_equal(embedder.embed([text]), mean_pool_normalise(np.asarray(hidden, dtype=np.float32), mask))


# Texts of the help-centre kind, short and long: what a user embeds, not a benchmark's.
_TEXTS = (
    "Where is my parcel?",
    "warranty",
    "How long does a refund take once the returned item has arrived at the warehouse?",
    "Our stores accept returns within 30 days of purchase if the item is unused and in its original packaging. " * 6,
    "The battery drains overnight even when the phone is switched off; is that covered?",
)


@pytest.mark.model
def test_smoothing_the_outliers_leaves_the_fp32_model_the_same_function(fp32_graph: bytes) -> None:
    import onnx

    from querywise.embed import OnnxEmbedder
    from querywise.embed._onnx import _calibration_ids
    from querywise.embed._smooth import smooth_outliers

    model = onnx.load_model_from_string(fp32_graph)
    assert smooth_outliers(model, 3.0, _calibration_ids()) > 0  # the model has outlier channels to move
    divisions = [n for n in model.graph.node if n.op_type == "Mul" and n.output[0].endswith("_shrunk")]
    assert 0 < len(divisions) <= 24  # at most the 4 MatMul inputs of each of the 6 layers
    before = OnnxEmbedder(fp32_graph, model_id="fp32", threads=1).embed(_TEXTS)
    after = OnnxEmbedder(model.SerializeToString(), model_id="smoothed", threads=1).embed(_TEXTS)
    assert np.sum(before * after, axis=1).min() > 1 - 1e-5


@pytest.mark.model
def test_splitting_off_the_outliers_leaves_the_fp32_model_the_same_function(fp32_graph: bytes) -> None:
    import onnx

    from querywise.embed import OnnxEmbedder
    from querywise.embed._onnx import _calibration_ids
    from querywise.embed._quantize import _name_weight_matmuls
    from querywise.embed._smooth import SIDE_SUFFIX, split_outliers

    model = onnx.load_model_from_string(fp32_graph)
    _name_weight_matmuls(model)  # as the quantizer names them before splitting
    recipe = INT8_VARIANTS["split"]
    assert split_outliers(model, recipe.outlier_split, _calibration_ids(), only=recipe.split_matmuls) > 0  # outlier channels to split off
    sides = [n for n in model.graph.node if n.op_type == "MatMul" and n.name.endswith(SIDE_SUFFIX)]
    assert {n.name.removesuffix(".weight_t" + SIDE_SUFFIX) for n in sides} == set(recipe.split_matmuls)  # the named ones only
    before = OnnxEmbedder(fp32_graph, model_id="fp32", threads=1).embed(_TEXTS)
    after = OnnxEmbedder(model.SerializeToString(), model_id="split", threads=1).embed(_TEXTS)
    assert np.sum(before * after, axis=1).min() > 1 - 1e-5


@pytest.mark.model
def test_split_int8_keeps_the_outlier_matmuls_and_embedding_tables_fp32(fp32_graph: bytes) -> None:
    """Every MatMul by a weight is int8; only the small outlier MatMuls beside them stay fp32, and
    the embedding tables are not quantized (no int8 table, no DequantizeLinear on a lookup)."""
    import onnx

    from querywise.embed._ffn import OUTLIER_COLUMNS
    from querywise.embed._smooth import SIDE_SUFFIX

    everything = _weights_by_op(fp32_graph)["MatMul"]
    data = quantize_int8(fp32_graph, INT8_VARIANTS["split"])
    ops = _weights_by_op(data)
    # and the feed-forward inputs' outlier columns, in int8 MatMuls of their own (`_ffn`)
    assert ops["MatMulInteger"] == everything | {f"encoder.layer.{i}.intermediate.dense.weight_t{OUTLIER_COLUMNS}" for i in range(6)}
    assert ops["MatMul"] and all(w.endswith("_outlier_rows") for w in ops["MatMul"])
    graph = onnx.load_model_from_string(data).graph
    assert all(n.name.endswith(SIDE_SUFFIX) for n in _nodes(graph) if n.op_type == "MatMul" and n.input[1] in {i.name for i in graph.initializer})
    assert _int8_lookups(graph) == 0
    assert "DequantizeLinear" not in {n.op_type for n in _nodes(graph)}
    # the quantizer's default does store the word and token-type tables int8
    assert _int8_lookups(onnx.load_model_from_string(quantize_int8(fp32_graph, INT8_VARIANTS["smoothed"])).graph) == 2


def _int8_lookups(graph: Any) -> int:
    """How many tables the quantizer stored in int8 a Gather looks up (each branch of the If
    looks up the same tables)."""
    return len({n.input[0] for n in _nodes(graph) if n.op_type == "Gather" and n.input[0].endswith("_quantized")})


def _alone(model: bytes) -> np.ndarray:
    """``_TEXTS``' vectors, each text alone (as `OnnxEmbedder.int8` runs)."""
    from querywise.embed import OnnxEmbedder

    return OnnxEmbedder(model, model_id="m", threads=1, batch_size=1, batch_tokens=0).embed(_TEXTS)


@pytest.mark.model
def test_split_int8_stays_closer_to_fp32_than_smoothed(fp32_graph: bytes) -> None:
    """Each text alone, as `OnnxEmbedder.int8` runs: splitting the outliers off agrees with fp32
    better than dividing them into the weights (bench/results/int8-split.md: mean 1 - cosine
    about 2.5x smaller on SciFact's train side)."""
    fp32 = _alone(fp32_graph)
    split = np.sum(_alone(quantize_int8(fp32_graph, INT8_VARIANTS["split"])) * fp32, axis=1)
    smoothed = np.sum(_alone(quantize_int8(fp32_graph, INT8_VARIANTS["smoothed"])) * fp32, axis=1)
    assert split.min() > 0.995
    assert (1 - split).mean() < (1 - smoothed).mean()


@pytest.mark.model
def test_smoothed_int8_stays_closer_to_fp32_than_plain_per_channel(fp32_graph: bytes) -> None:
    """A fidelity floor: each text alone (as `OnnxEmbedder.int8` runs), the smoothed recipe's
    vectors within cosine 0.99 of fp32's, and nearer on average than the plain per-channel call
    (bench/results/int8-smooth.md: mean 1 - cosine about 2-3x smaller)."""
    fp32 = _alone(fp32_graph)
    smoothed = np.sum(_alone(quantize_int8(fp32_graph, INT8_VARIANTS["smoothed"])) * fp32, axis=1)
    plain = np.sum(_alone(quantize_int8(fp32_graph, INT8_VARIANTS["per-channel"])) * fp32, axis=1)
    assert smoothed.min() > 0.99
    assert (1 - smoothed).mean() < (1 - plain).mean()


@pytest.mark.model
def test_counting_a_builds_texts_then_embedding_them_gives_a_fresh_tokenization_and_the_same_vectors(fp32_graph: bytes) -> None:
    # A build counts each slice's tokens (the window report) and then embeds it: the ids kept from
    # the counting are the truncating tokenizer's, so the vectors are those of texts never counted.
    import numpy as np

    from querywise.embed import OnnxEmbedder

    texts = ["Where is my parcel?", "", "Aspirin lowers the risk of a second heart attack in adults over 50. " * 30,
             "naïve café — 1,000 mg/kg (p < 0.05) " * 40, "x" * 3000]
    counting, fresh = OnnxEmbedder(fp32_graph, model_id="fp32", threads=1), OnnxEmbedder(fp32_graph, model_id="fp32", threads=1)
    counts = counting.token_counts(texts)
    assert counts == [len(fresh._tokenizer.encode(t, add_special_tokens=True).ids) if n <= 256 else n
                      for t, n in zip(texts, counts, strict=True)]
    assert counts[2] > 256 and counts[3] > 256  # two texts the window cuts
    assert set(counting._counted) == set(texts)  # what the embedding reuses
    for text, kept in counting._counted.items():
        assert kept.tolist() == fresh._tokenizer.encode(text).ids
    assert np.array_equal(counting.embed(texts), fresh.embed(texts))


def test_the_weights_are_read_once_while_unchanged(weights: Path) -> None:
    # A cold int8 build asks for the weights' digest three times (two file names, the model id):
    # one read of the file, and a file written again is read again.
    from querywise.embed import _onnx

    _onnx._weights_digest.cache_clear()
    keys = {int8_key(weights, INT8_VARIANTS["split"]) for _ in range(3)}
    assert len(keys) == 1 and _onnx._weights_digest.cache_info().misses == 1
    (weights / "model.safetensors").write_bytes(b"other weights")
    assert int8_key(weights, INT8_VARIANTS["split"]) not in keys and _onnx._weights_digest.cache_info().misses == 2


@pytest.mark.model
def test_a_query_runs_on_one_thread_and_gets_the_vector_one_thread_per_core_gave(fp32_graph: bytes) -> None:
    """int8 embeds each text alone, a query on a session of one intra-op thread (a second thread
    woken for a short text's small operators cost more than it shared: bench/results/query_cold.md).
    Its vector is the one a session of two threads gave, bit for bit, and the one a build gives the
    same text among others (run `threads` at once on that session): a query still finds its own chunk."""
    from querywise.embed import OnnxEmbedder

    int8 = quantize_int8(fp32_graph, INT8_VARIANTS[INT8_DEFAULT])
    now = OnnxEmbedder(int8, model_id="m", threads=2, batch_size=1, batch_tokens=0)
    assert now._session.get_session_options().intra_op_num_threads == 1
    before = OnnxEmbedder(int8, model_id="m", threads=2, batch_size=1, batch_tokens=0)
    before._session = before._new_session(2)  # queries' session until this change
    assert before._session.get_session_options().intra_op_num_threads == 2
    alone = np.concatenate([now.embed([t]) for t in _TEXTS])
    assert np.array_equal(alone, np.concatenate([before.embed([t]) for t in _TEXTS]))
    assert np.array_equal(alone, now.embed(_TEXTS))
