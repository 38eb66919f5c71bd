"""A BERT encoder written as an ONNX graph straight from its safetensors: no torch.

    data = bert_onnx(model_dir())  # the ONNX file's bytes: input_ids, attention_mask, token_type_ids -> last_hidden_state

The graph is the one transformers' eager BertModel computes (embeddings and their LayerNorm,
then per layer: self-attention with the additive padding mask, output dense, residual and
LayerNorm, the feed-forward with exact GELU, residual and LayerNorm), in the plain operators
torch's exporter emits, so ONNX Runtime fuses it the same way. ``fused=True`` writes each
layer's self-attention as ONNX Runtime's `com.microsoft.Attention` instead (one product with the
query, key and value weights side by side; scaling, the padding mask, read as each text's length,
and softmax in one kernel) and the feed-forward's bias and exact GELU as `BiasGelu`: the same
vectors within 2e-7, and 0-4% faster on one thread (148.2 against 144.2 useful GFLOP per
CPU-second on SciFact, 140.2 against 139.2 on Medline, bench/results/embed_efficiency.md, which
keeps measuring it; +0.3% and +0.2% in another run). ONNX Runtime's quantizer reads it only when
told the contrib operators' output type (``extra_options={"DefaultTensorType": FLOAT}``: QAttention
then quantizes the query, key and value products), and that int8 graph ran within the noise of the
plain one's (+4% best, -3% median, SciFact abstracts, one thread, load 11-18, 2026-12-05), so the
embedder runs the plain graph: one graph for fp32 and int8, and exports already on disk stay valid.
`SkipLayerNormalization` for residual + LayerNorm ran slower than LayerNormalization after an Add
(3.7x on one thread), so the embedder also keeps ONNX Runtime from fusing it in the int8 graph
(`_onnx.UNFUSED`). Building it from the weights,
rather than tracing torch, is what lets the runtime install without torch (Python 3.12 and 3.13
have only CUDA builds of several GB on PyPI); tests/test_embed.py checks the graph against
sentence-transformers where the `torch` extra is installed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["bert_onnx"]

_OPSET = 17  # LayerNormalization is a standard operator from 17 on
_IR_VERSION = 8  # the IR of opset 17: any ONNX Runtime that runs the opset reads it


def bert_onnx(folder: Path, *, fused: bool = False) -> bytes:
    """The BERT encoder of ``folder`` (config.json, model.safetensors) as a serialised ONNX model,
    in standard operators, or with ONNX Runtime's fused attention and GELU (``fused``)."""
    from onnx import TensorProto, helper, numpy_helper

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{folder}: only a BERT encoder with exact GELU is exported (model_type "
                         f"{config.get('model_type')!r}, hidden_act {config.get('hidden_act')!r})")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{folder}: position_embedding_type {config['position_embedding_type']!r} is not exported")
    weights = _read_safetensors(folder / "model.safetensors")
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    eps = float(config["layer_norm_eps"])
    g = _Graph(helper, numpy_helper)

    # Embeddings: word + position (the table's first S rows) + token type, then LayerNorm.
    g.node("Shape", ["input_ids"], ["seq_len"], start=1, end=2)
    g.const("zero", np.array([0], dtype=np.int64))
    position_table = g.const("position_table", weights["embeddings.position_embeddings.weight"])
    g.node("Slice", [position_table, "zero", "seq_len", "zero"], ["position"])
    word = g.gather(weights["embeddings.word_embeddings.weight"], "input_ids")
    token_type = g.gather(weights["embeddings.token_type_embeddings.weight"], "token_type_ids")
    x = g.layer_norm(g.add(g.add(word, "position"), token_type), weights, "embeddings.LayerNorm", eps)

    if fused:
        _mask_lengths(g)
    else:
        _plain_constants(g, heads, hidden)
    for layer in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{layer}"
        x = (_fused_attention(g, x, weights, f"{p}.attention", eps, heads) if fused
             else _attention(g, x, weights, f"{p}.attention", eps))
        x = _feed_forward(g, x, weights, p, eps, fused)
    g.node("Identity", [x], ["last_hidden_state"])

    ids = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
           for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])
    graph = helper.make_graph(g.nodes, "bert", ids, [out], initializer=g.initializers)
    opsets = [helper.make_opsetid("", _OPSET), *([helper.make_opsetid("com.microsoft", 1)] if fused else [])]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="querywise")
    model.ir_version = _IR_VERSION
    data: bytes = model.SerializeToString()
    return data


def _plain_constants(g: _Graph, heads: int, hidden: int) -> None:
    """The padding mask as transformers adds it to the scores: 0 where a token is, the float32
    minimum where padding is, shaped (batch, 1, 1, seq); and the plain layers' constants."""
    from onnx import TensorProto

    g.node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT)
    g.const("f_one", np.array(1.0, dtype=np.float32))
    g.const("f_min", np.array(np.finfo(np.float32).min, dtype=np.float32))
    g.node("Sub", ["f_one", "mask_f"], ["mask_off"])
    g.node("Mul", ["mask_off", "f_min"], ["mask_add_2d"])
    g.const("mask_axes", np.array([1, 2], dtype=np.int64))
    g.node("Unsqueeze", ["mask_add_2d", "mask_axes"], ["mask_add"])
    g.const("split_heads", np.array([0, 0, heads, hidden // heads], dtype=np.int64))
    g.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    g.const("scale", np.array(1.0 / math.sqrt(hidden // heads), dtype=np.float32))
    g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    g.const("half", np.array(0.5, dtype=np.float32))


def _mask_lengths(g: _Graph) -> None:
    """The padding mask as the fused Attention reads it: each text's length (int32, batch,).
    The embedder pads on the right, so a length says which keys are real."""
    from onnx import TensorProto

    g.const("seq_axis", np.array([1], dtype=np.int64))
    g.node("ReduceSum", ["attention_mask", "seq_axis"], ["mask_lengths_64"], keepdims=0)
    g.node("Cast", ["mask_lengths_64"], ["mask_lengths"], to=TensorProto.INT32)


def _fused_attention(g: _Graph, x: str, weights: dict[str, npt.NDArray[Any]], p: str, eps: float, heads: int) -> str:
    """Self-attention as one `com.microsoft.Attention` (query, key and value weights side by side),
    then the output dense, residual and LayerNorm as in the plain form."""
    qkv = ("query", "key", "value")
    w = g.const(f"{p}.self.qkv.weight_t", np.concatenate([weights[f"{p}.self.{n}.weight"].T for n in qkv], axis=1))
    b = g.const(f"{p}.self.qkv.bias", np.concatenate([weights[f"{p}.self.{n}.bias"] for n in qkv]))
    context = g.op("Attention", [x, w, b, "mask_lengths"], domain="com.microsoft", num_heads=heads)
    return g.layer_norm(g.add(g.linear(context, weights, f"{p}.output.dense"), x), weights, f"{p}.output.LayerNorm", eps)


def _attention(g: _Graph, x: str, weights: dict[str, npt.NDArray[Any]], p: str, eps: float) -> str:
    def heads(name: str, order: list[int]) -> str:
        projected = g.linear(x, weights, f"{p}.self.{name}")
        split = g.fresh(name)
        g.node("Reshape", [projected, "split_heads"], [split])
        return g.op("Transpose", [split], perm=order)

    q = heads("query", [0, 2, 1, 3])  # (batch, heads, seq, head_dim)
    k = heads("key", [0, 2, 3, 1])  # (batch, heads, head_dim, seq)
    v = heads("value", [0, 2, 1, 3])
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), "scale"]), "mask_add"])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    merged = g.fresh("merged")
    g.node("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]), "merge_heads"], [merged])
    return g.layer_norm(g.add(g.linear(merged, weights, f"{p}.output.dense"), x), weights, f"{p}.output.LayerNorm", eps)


def _feed_forward(g: _Graph, x: str, weights: dict[str, npt.NDArray[Any]], p: str, eps: float, fused: bool) -> str:
    dense = f"{p}.intermediate.dense"
    if fused:  # BiasGelu is exact (erf), as BERT's "gelu"; FastGelu would be tanh's approximation
        inner = g.op("MatMul", [x, g.const(f"{dense}.weight_t", weights[f"{dense}.weight"].T)])
        gelu = g.op("BiasGelu", [inner, g.const(f"{dense}.bias", weights[f"{dense}.bias"])], domain="com.microsoft")
    else:
        inner = g.linear(x, weights, dense)
        # Exact GELU, as BERT's "gelu": x * 0.5 * (1 + erf(x / sqrt 2)); ONNX Runtime fuses the pattern.
        erf = g.op("Erf", [g.op("Div", [inner, "sqrt2"])])
        gelu = g.op("Mul", [g.op("Mul", [inner, g.op("Add", [erf, "f_one"])]), "half"])
    out = g.linear(gelu, weights, f"{p}.output.dense")
    return g.layer_norm(g.add(out, x), weights, f"{p}.output.LayerNorm", eps)


class _Graph:
    """Nodes and initializers under construction, with fresh names for intermediate values."""

    def __init__(self, helper: Any, numpy_helper: Any) -> None:
        self._helper, self._numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}_{self._count}"

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, kind: str, inputs: list[str], outputs: list[str], **attributes: Any) -> None:
        self.nodes.append(self._helper.make_node(kind, inputs, outputs, **attributes))

    def op(self, kind: str, inputs: list[str], **attributes: Any) -> str:
        out = self.fresh(kind.lower())
        self.node(kind, inputs, [out], **attributes)
        return out

    def add(self, a: str, b: str) -> str:
        return self.op("Add", [a, b])

    def gather(self, table: npt.NDArray[Any], indices: str) -> str:
        return self.op("Gather", [self.const(self.fresh("table"), table), indices], axis=0)

    def linear(self, x: str, weights: dict[str, npt.NDArray[Any]], prefix: str) -> str:
        """x W^T + b, with W stored (out, in) as torch's Linear keeps it."""
        w = self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.add(self.op("MatMul", [x, w]), b)

    def layer_norm(self, x: str, weights: dict[str, npt.NDArray[Any]], prefix: str, eps: float) -> str:
        gamma = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        beta = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)


_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def _read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """The tensors of a safetensors file, floating-point ones as float32.

    The format is an 8-byte little-endian header length, a JSON header (name -> dtype, shape,
    byte offsets into the data that follows) and the raw little-endian data; read here with
    numpy so that reading weights needs neither torch nor another package.
    """
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    out: dict[str, npt.NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] not in _DTYPES:
            continue
        start, end = spec["data_offsets"]
        dtype = np.dtype(_DTYPES[spec["dtype"]]).newbyteorder("<")
        array = np.frombuffer(raw, dtype=dtype, count=(end - start) // dtype.itemsize, offset=base + start).reshape(spec["shape"])
        out[name] = array.astype(np.float32, copy=False) if array.dtype.kind == "f" else array
    return out
