"""all-MiniLM-L6-v2 on ONNX Runtime: the same pipeline as sentence-transformers, faster on a CPU."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

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
)
from ._smooth import CALIBRATION_TEXTS

if TYPE_CHECKING:
    import onnxruntime as ort

__all__ = [
    "INT8_DEFAULT",
    "INT8_VARIANTS",
    "Int8Recipe",
    "Int8Variant",
    "OnnxEmbedder",
    "export_fp32_onnx",
    "export_int8_onnx",
    "int8_key",
    "int8_model_id",
    "quantize_int8",
]

FP32_MODEL_ID = f"{MODEL_NAME}/onnx-fp32"
# Small batches stay in the CPU's caches: capping a batch at 1,024 padded tokens (4 texts of
# 256) embedded 17% more SciFact abstracts and 19% more 100-word passages a second than 64 texts
# a batch on 2 AVX2 cores (2026-12-03, bench/results/embed_throughput.json, onnx_batch_tokens).
# On a shared AVX-512 machine, whose other processes take the caches too, half of that does
# better: 512 tokens (2 texts of 256) ran fp32 at 144.2 useful GFLOP per CPU-second against
# 135.5 at 1,024 on SciFact, which chose it (best of 5, load 6-9; 256 tokens: 142.7), and 139.2
# against 124.0 on Medline, which reports it (bench/results/embed_efficiency.md; an earlier run
# at load 5: 148.6 against 134.8, and 155.2 against 143.7). Shorter texts too, one thread, 5
# alternated turns, load 6-9: 600 CLINC150 utterances 543 against 505 a second, 200 passages of
# 100 words 38.5 against 35.7.
BATCH_TOKENS = 512
# (int8 embeds each text alone, whatever these say: `OnnxEmbedder.int8`.)
# A build counts a slice's tokens (the window report) just before embedding it: up to this many
# texts, the counting keeps each text's ids for `embed` (`writing._EMBED_SLICE`; more is not kept,
# to bound the memory), so the corpus is tokenized once, not twice.
COUNTED_KEPT = 4096
SPIN_STOP = "session.force_spinning_stop"  # ONNX Runtime's session entry: threads stop spinning when a call returns
# ONNX Runtime fuses residual Add + LayerNormalization into SkipLayerNormalization in the int8 graph
# (not in the fp32 one, whose optimized graph is the same with or without this fusion). Its CPU
# kernel ran 3.7x slower than the Add + Add + LayerNormalization it replaces (1.80 ms against 0.49
# ms on one (4, 256, 384) batch, one thread, ONNX Runtime 1.32) and took 16-18% of the int8 model's
# time. Without it int8 did 243.8 useful GFLOP per CPU-second against 187.5 on SciFact abstracts and
# 271.4 against 209.4 on Medline (one thread, best of 5 alternated turns, load 9:
# bench/results/embed_efficiency.md), and a cold int8 build's model phase 197.1 against 155.6 (two
# threads; bench/results/build_breakdown.md). int8's vectors move (cosine to the fused session's:
# min 0.9957, mean 0.9986 on SciFact) and lose nothing: SciFact hybrid nDCG@10 as typed 0.7112
# against 0.7091 with the fusion (fp32 0.7178; bench/results/int8_fusion.json). fp32's do not move.
UNFUSED = ("SkipLayerNormFusion",)

# ONNX Runtime's dynamic quantization of the fp32 export (int8 weights, activations quantized per
# call). How the weights are scaled decides what it loses: on SciFact, one scale per output channel
# of each MatMul gives hybrid nDCG@10 0.7191 against fp32's 0.7178 (smallest cosine to fp32 0.989),
# one scale per tensor (the quantizer's default) 0.7067 (0.868), per channel with reduce_range
# (7-bit weights) 0.7135 (bench/results/int8.md as of commit 54a0ccc). Per channel still lost 0.0064
# on the demo and 0.007 on SciFact in a later run. "mixed" keeps the MatMuls whose int8 error is
# largest in fp32: the feed-forward outputs of the first three layers, whose input (after GELU) has
# a heavy tail that one uint8 scale per batch resolves poorly. Chosen on SciFact + Medline samples
# (bench/results/int8-rank.md), it halves the cosine error to fp32 (mean 1 - cosine 0.0051 ->
# 0.0027 over documents) at 1.65x fp32's tokens per CPU-second against 2.02x, but its nDCG@10 did
# not follow: SciFact hybrid as typed 0.7108 against fp32's 0.7178, 25 claims down and 8 up (paired
# p 0.03), Medline -0.0044 (bench/results/int8.md, 15:52). It holds nowhere the bar asks, so the
# embedder stayed "per-channel"; the others exist for the benchmarks. Those runs read int8 vectors
# from a cache that mixed two exports under one id (`_QUANTIZE_RECIPE`); fresh, each text alone,
# per channel lost 0.0018 on SciFact's default deployment (paired SE 0.0042), 0.0092 on Medline
# (0.0054), 0.0040 on doc2dial (0.0016), and gained 0.0023 on the demo (int8.md, 19:20): short
# of the bar on Medline and doc2dial. "smoothed" divides each MatMul input's outlier channels down
# into the weights first (`_smooth`): chosen on SciFact's train side (bench/results/int8-smooth.md:
# mean cosine to fp32 0.9951 -> 0.9978 on abstracts, 0.9937 -> 0.9980 on claims, no slower), it
# lost 0.0015 on SciFact's default deployment, 0.0015 on doc2dial, gained 0.0027 on the demo and
# still lost 0.0055 on Medline (30 queries; bench/results/int8-smoothed.md): short of the bar there
# too, but nearer fp32 than per-channel on every collection and no slower. "split" keeps
# smoothing for the attention and FFN-input MatMuls and multiplies the feed-forward outputs'
# outlier input channels (after GELU: those whose error cost most, one MatMul kept fp32 at a time)
# in small fp32 MatMuls beside the int8 ones (`_smooth.split_outliers`), the embedding tables
# left fp32: chosen on SciFact's train side (bench/results/int8-split.md), mean 1 - cosine to
# fp32 about half smoothed's at about 5% of int8's speed; it is the default
# (bench/results/int8-split-collections.md for every collection). Splitting every MatMul's
# outliers agreed better still but its extra Adds cost a quarter of the speed.
Int8Variant = Literal["mixed", "per-channel", "per-tensor", "reduce-range", "smoothed", "split"]


@dataclass(frozen=True)
class Int8Recipe:
    """How `quantize_int8` quantizes the fp32 export: weights per output channel or per tensor,
    7-bit weights (``reduce_range``), the MatMuls kept in fp32 (``fp32_matmuls``), each named
    by its weight as the packaged model names it, e.g. ``"encoder.layer.0.output.dense"``, and
    ``outlier_ratio``: when above 0, activation channels larger than this many times the median
    channel are first divided down into the weights (`_smooth.smooth_outliers`); ``outlier_split``:
    when above 0, the input channels of the MatMuls named in ``split_matmuls`` larger than this
    many times the median are multiplied in fp32 beside the int8 MatMul instead
    (`_smooth.split_outliers`); ``int8_embeddings``: the embedding tables stored int8 too (the
    quantizer's default) or left fp32."""

    per_channel: bool = True
    reduce_range: bool = False
    fp32_matmuls: tuple[str, ...] = ()
    outlier_ratio: float = 0.0
    outlier_split: float = 0.0
    split_matmuls: tuple[str, ...] = ()
    int8_embeddings: bool = True


def ffn_output(i: int) -> str:
    """The feed-forward output MatMul of BERT layer ``i`` (intermediate -> output), by its weight's name."""
    return f"encoder.layer.{i}.output.dense"


INT8_VARIANTS: Final[dict[str, Int8Recipe]] = {
    "mixed": Int8Recipe(fp32_matmuls=tuple(ffn_output(i) for i in range(3))),
    "per-channel": Int8Recipe(),
    "per-tensor": Int8Recipe(per_channel=False),
    "reduce-range": Int8Recipe(reduce_range=True),
    "smoothed": Int8Recipe(outlier_ratio=3.0),
    "split": Int8Recipe(outlier_ratio=3.0, outlier_split=2.0, split_matmuls=tuple(ffn_output(i) for i in range(6)), int8_embeddings=False),
}
INT8_DEFAULT: Final[Int8Variant] = "split"


def int8_model_id(base: str, key: str, variant: Int8Variant = INT8_DEFAULT) -> str:
    """The model id of ``base`` (a model's name) quantized as ``variant`` by the recipe ``key``
    names (`int8_key`): vectors of different variants, or of one variant quantized from another
    export or by another recipe, are not interchangeable, so each has its own id (and cache entries,
    and an index built with one refuses the others by name).

    >>> int8_model_id("all-MiniLM-L6-v2", "0123456789ab", "mixed")
    'all-MiniLM-L6-v2/onnx-int8-mixed-0123456789ab'
    """
    kind = "onnx-int8" if variant == INT8_DEFAULT else f"onnx-int8-{variant}"
    return f"{base}/{kind}-{key}"


# Part of the exported file's name: bump it whenever export_fp32_onnx writes a different graph
# ("1": torch's TorchScript exporter; "2": the graph written from the weights, `_graph.bert_onnx`).
_EXPORT_RECIPE = "2"
# Part of the int8 file's name and of its model id (`int8_key`), beside the fp32 export's recipe,
# the weights, the `Int8Recipe` and the quantizer's version: bump it whenever `quantize_int8`
# writes a graph that computes other vectors for the same recipe (the same vectors in another
# form: `_INT8_FORM`), or `OnnxEmbedder.int8` runs it differently. An
# int8 id that stayed the same across such a change let vectors of the old file and of the new one
# meet in one shared embedding cache (issue #39). "1": activations scaled per batch of 1,024
# tokens; "2": each text embedded alone; "3": `Int8Recipe.outlier_ratio` (the calibration texts
# of `_smooth` are part of this recipe: change them, bump it); "4": `Int8Recipe.outlier_split`,
# `split_matmuls` and `int8_embeddings`.
_QUANTIZE_RECIPE = "4"
# Part of the int8 file's name only: bump it when `quantize_int8` writes the graph in another form
# that computes the same vectors bit for bit (a test shows it), so a new file is written rather than
# an older one reused, while the model id, the cached vectors and the indexes stay valid. "1": the
# branch that skips the padding masks' Adds for a text alone (`_unpadded`: 10% less CPU a text);
# "2": the split feed-forwards' outlier channels from MatMuls of their own, not masked and gathered
# (`_ffn`: the same vectors bit for bit, 7% less CPU a text alone; bench/results/int8_ffn.md).
# "3": that branch's attention reads the heads in place, for one text (`_attention`: 3-4% less).
_INT8_FORM = "3"
# `_quantize.py`'s first argument when it exports the weights itself (`_quantize.FROM_WEIGHTS`;
# not imported from there: the parent never loads the quantizer's module).
_FROM_WEIGHTS = "--from-weights"


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
        spinning: bool = True,
        unfused: Sequence[str] = UNFUSED,
    ) -> None:
        """Wrap ``model``, an ONNX file or its bytes, mapping input_ids, attention_mask (and
        token_type_ids) to last_hidden_state. ``threads`` caps ONNX Runtime's intra-op threads
        (default: one per core); with ``batch_size`` 1 (each text alone, as int8 embeds) every
        call runs on one intra-op thread and ``threads`` texts run at once instead. A batch holds
        at most ``batch_size`` texts and, padded, at most ``batch_tokens`` tokens (0: no token
        limit). ``spinning``: idle intra-op threads spin while a call runs (ONNX Runtime's
        default; a build's sleep: `load_embedder`'s ``bulk``); either way they stop when the call
        returns. ``unfused``: ONNX Runtime's graph optimizers
        turned off (`UNFUSED`; the benchmarks measure the session without it)."""
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
        self._untruncated = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._untruncated.no_padding()
        self._untruncated.no_truncation()
        # Each text's ids as `embed` feeds them, from the last `token_counts` call (keyed by text,
        # so a text's entry is right whoever counted it).
        self._counted: dict[str, npt.NDArray[np.int64]] = {}
        self._cut_exact = self._cut_matches_truncation()

        self.spinning = spinning
        self._source, self._unfused = (model if isinstance(model, bytes) else str(model)), list(unfused)
        # Texts embedded alone (int8: batches of one) are run `_workers` at once on a session of one
        # intra-op thread each call: 240 SciFact abstracts took 1.65-1.76 s against 2.88-2.92 s on
        # the two-thread session, the same vectors (smallest cosine 0.9999998; load 0.2-0.5).
        self._workers = threads if threads is not None else (os.cpu_count() or 1)
        # A text alone that is a query runs on that one-thread session too: a second thread woken for
        # each of a short text's small operators cost more than it shared. SciFact's int8 searches
        # right after three torch calls in another process (bench/results/query_cold.md, 2 cores at
        # load 5.5-7.8, alternated): p50 8.78 ms against 12.49 with one thread per core, p90 17.96
        # against 25.95, process CPU 4.52 against 7.63 ms; the same hits and scores on all 300.
        # So a model that embeds texts alone holds one session, of one thread.
        self._session = self._new_session(1 if batch_size == 1 else threads)
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
        spinning: bool = True,
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
            spinning=spinning,
        )

    @classmethod
    def int8(
        cls,
        *,
        export_dir: Path | None,
        threads: int | None = None,
        model_folder: Path | None = None,
        base_id: str = MODEL_NAME,
        variant: Int8Variant = INT8_DEFAULT,
        spinning: bool = True,
    ) -> OnnxEmbedder:
        """The fp32 export (of the packaged model or ``model_folder``) quantized to int8 weights
        by ONNX Runtime (``variant``: see `INT8_VARIANTS`); kept in ``export_dir`` beside it. Its
        model id is ``base_id``'s for this variant and recipe (`int8_model_id`, `int8_key`).

        Each text is embedded alone: the quantized graph scales a MatMul's activations by their
        largest value over the whole call, so a text embedded beside others (and their padding)
        came out other than the same text alone, as a query is at search: mean cosine 0.9961
        between the two over 500 SciFact + Medline abstracts, 0.9921 over SciFact's train claims,
        as far apart as int8 is from fp32. Alone, a text's vector is its own, no further from fp32,
        at about the same CPU cost (no padding): 10.9 against 11.0 CPU-s for those abstracts on one
        thread; SciFact's train claims lost 0.0052 dense nDCG@10 to fp32 searched alone against a
        corpus embedded in batches, 0.0022 with both alone (bench/results/int8-batch.md)."""
        folder = model_folder or model_dir()
        recipe = INT8_VARIANTS[variant]
        return cls(
            export_int8_onnx(export_dir, model_folder, variant=variant),
            model_id=int8_model_id(base_id, int8_key(folder, recipe), variant),
            batch_size=1,
            threads=threads,
            batch_tokens=0,
            spinning=spinning,
        )

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Each text's length in tokens before truncation at ``window``. Up to `COUNTED_KEPT`
        texts, their ids truncated are kept for the next `embed` of the same texts (a build's
        slice: counted, then embedded), which then does not tokenize them again."""
        keep = self._cut_exact and len(texts) <= COUNTED_KEPT
        kept: dict[str, npt.NDArray[np.int64]] = {}
        out: list[int] = []
        for start in range(0, len(texts), COUNTED_KEPT):  # slices: encodings hold offsets too; bound the memory
            part = list(texts[start : start + COUNTED_KEPT])
            for text, encoding in zip(part, self._untruncated.encode_batch(part), strict=True):
                ids = encoding.ids
                out.append(len(ids))
                if keep:
                    kept[text] = self._cut(ids)
        self._counted = kept
        return out

    def _cut(self, ids: list[int]) -> npt.NDArray[np.int64]:
        """Untruncated ids cut as the truncating tokenizer cuts them: the first ``window - 1``
        (the leading [CLS] and the text), then the closing [SEP]."""
        if self.window is not None and len(ids) > self.window:
            ids = ids[: self.window - 1] + ids[-1:]
        return np.asarray(ids, dtype=np.int64)

    def _cut_matches_truncation(self) -> bool:
        """Whether `_cut` gives what the truncating tokenizer gives (true of BERT's template,
        [CLS] text [SEP]): checked on a text twice the window, else counted ids are not reused."""
        probe = " ".join(["querywise"] * 2 * (self.window or 1))
        return self._cut(self._untruncated.encode(probe).ids).tolist() == self._tokenizer.encode(probe).ids

    def _new_session(self, threads: int | None) -> ort.InferenceSession:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: a library does not write to stderr
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        if not self.spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Threads left spinning after a call take the cores the search that follows needs. SciFact's
        # 300 test queries, interleaved (bench/results/query_latency.md, load 4): the whole search
        # p50 8.38 ms, 8.78 with them left spinning. Within a call they still spin: threads that
        # sleep throughout made it 10.14 ms, one thread 10.63.
        options.add_session_config_entry(SPIN_STOP, "1")
        return ort.InferenceSession(self._source, options, providers=["CPUExecutionProvider"], disabled_optimizers=self._unfused)

    def embed(
        self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None
    ) -> Vectors:
        """Embed ``texts``; rows are unit length and in input order."""
        if len(texts) == 1:
            # A query: tokenised alone (the batch call hands one text to a thread pool) and run as
            # the batch of one it would be, without sorting and gathering batches: the same vector.
            vectors = self._run(self._ids(texts))
            if on_progress is not None:
                on_progress(1)
            return vectors
        encodings = self._ids(texts)
        workers = self._workers if self.batch_size == 1 and encodings else 1

        def run_batch(positions: npt.NDArray[np.intp]) -> Vectors:
            return self._run([encodings[i] for i in positions])

        return embed_in_batches(
            [len(e) for e in encodings], self.batch_size, self.dim, run_batch, on_progress,
            self.batch_tokens, workers=workers,
        )

    def _ids(self, texts: Sequence[str]) -> list[npt.NDArray[np.int64]]:
        """Each text's ids, truncated: those `token_counts` kept, the others tokenized now."""
        counted = self._counted
        out: list[npt.NDArray[np.int64] | None] = [counted.get(text) for text in texts]
        fresh = [i for i, ids in enumerate(out) if ids is None]
        if fresh:
            todo = [texts[i] for i in fresh]
            # One text (a query) alone: the batch call hands it to a thread pool.
            encodings = [self._tokenizer.encode(todo[0])] if len(todo) == 1 else self._tokenizer.encode_batch(todo)
            for i, encoding in zip(fresh, encodings, strict=True):
                out[i] = np.asarray(encoding.ids, dtype=np.int64)
        return [ids for ids in out if ids is not None]

    def _run(self, batch: Sequence[npt.NDArray[np.int64]], session: ort.InferenceSession | None = None) -> Vectors:
        width = max(len(e) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = (session or self._session).run(
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
    """Write the packaged safetensors as an ONNX graph (fp32, dynamic batch and length), offline.

    The graph is written from the weights (`_graph.bert_onnx`: a few seconds, no torch) in a
    child process, whose memory goes back when it exits, so a first build peaks no higher than
    later ones. With ``export_dir`` the file is written once, atomically, under a name keyed by
    the weights' sha256 and the export recipe, and later calls return its path.
    """
    folder = model_folder or model_dir()
    if export_dir is not None:
        target = _fp32_target(export_dir, folder)
        if target.is_file():
            return target
    data = _export_in_child(folder)
    if export_dir is None:
        return data
    export_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(target, data)  # a killed export never leaves a truncated model behind
    return target


def _fp32_target(export_dir: Path, folder: Path) -> Path:
    """Where `export_fp32_onnx` keeps the export of the weights in ``folder``."""
    return export_dir / f"{MODEL_NAME}-fp32-{_weights_key(folder)}.onnx"


def export_int8_onnx(
    export_dir: Path | None, model_folder: Path | None = None, *, variant: Int8Variant = INT8_DEFAULT
) -> Path | bytes:
    """The fp32 export quantized by ONNX Runtime as ``variant`` (`INT8_VARIANTS`); with
    ``export_dir`` written once, atomically, beside the fp32 file, under a name keyed by
    `int8_key`: a new recipe writes a new file instead of reusing the old one."""
    folder = model_folder or model_dir()
    recipe = INT8_VARIANTS[variant]
    if export_dir is not None:
        target = export_dir / f"{MODEL_NAME}-int8-{variant}-{int8_key(folder, recipe)}-f{_INT8_FORM}.onnx"
        if target.is_file():
            return target
    fp32_target = None if export_dir is None else _fp32_target(export_dir, folder)
    if fp32_target is not None and fp32_target.is_file():
        data = _quantize_in_child(fp32_target, recipe)
    else:
        # No fp32 export yet (a cold start): one child exports and quantizes, so one interpreter
        # starts and loads numpy and onnx, and the fp32 graph is quantized from its bytes in memory
        # (the fp32 file is still written, for an fp32 embedder of the same weights).
        fp32, data = _export_and_quantize_in_child(folder, recipe)
        if fp32_target is not None:
            fp32_target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(fp32_target, fp32)
    if export_dir is None:
        return data
    write_atomic(target, data)
    return target


def int8_key(folder: Path, recipe: Int8Recipe) -> str:
    """What an int8 model's vectors depend on, hashed: the weights in ``folder`` and the fp32
    export's recipe, ``recipe``, how `quantize_int8` applies it and runs it (`_QUANTIZE_RECIPE`;
    the session's optimizers turned off, `UNFUSED`), and the version of ONNX Runtime's quantizer.
    Part of the quantized file's name and of its model id, so a change of any of them neither
    reuses an older file nor mixes its vectors with the cached ones of an older file, and an index
    built with the older one is refused by name."""
    from importlib.metadata import version

    parts = (_weights_key(folder), _QUANTIZE_RECIPE, version("onnxruntime"), repr(recipe), ",".join(UNFUSED))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12]


def quantize_int8(fp32: Path | bytes, recipe: Int8Recipe) -> bytes:
    """``fp32`` (an export of `export_fp32_onnx`) with int8 weights as ``recipe`` says
    (`quantize_dynamic`: activations quantized per call), in this process; the MatMuls it names
    stay fp32, and with ``recipe.outlier_ratio`` the activations' outlier channels move into the
    weights first (`_smooth`). `export_int8_onnx` runs the same in a child."""
    from ._quantize import quantize

    data = fp32 if isinstance(fp32, bytes) else fp32.read_bytes()
    return quantize(data, **_quantize_spec(recipe))


def _quantize_spec(recipe: Int8Recipe) -> dict[str, Any]:
    """`_quantize.quantize`'s keyword arguments for ``recipe`` (JSON for its child)."""
    return {"per_channel": recipe.per_channel, "reduce_range": recipe.reduce_range, "fp32_matmuls": list(recipe.fp32_matmuls),
            "outlier_ratio": recipe.outlier_ratio, "outlier_split": recipe.outlier_split, "split_matmuls": list(recipe.split_matmuls), "int8_embeddings": recipe.int8_embeddings,
            "calibration_ids": _calibration_ids() if recipe.outlier_ratio > 0 or (recipe.outlier_split > 0 and recipe.split_matmuls) else []}


def _calibration_ids() -> list[list[int]]:
    """`CALIBRATION_TEXTS` tokenized as the embedder does (the packaged tokenizer, which a
    fine-tuned copy shares; truncated at the model's window)."""
    from tokenizers import Tokenizer

    folder = model_dir()
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_seq_length(folder))
    return [e.ids for e in tokenizer.encode_batch(list(CALIBRATION_TEXTS))]




def _export_in_child(folder: Path) -> bytes:
    """Run `_export.py` in a fresh interpreter and return the ONNX file it wrote."""
    return _in_child("_export.py", [str(folder)], f"exporting {folder} to ONNX")


def _quantize_in_child(fp32: Path | bytes, recipe: Int8Recipe) -> bytes:
    """`quantize_int8` in a fresh interpreter (`_quantize.py`): the parent never holds the model's
    protobuf nor imports the quantizer, and waits on the child without the GIL, so a build
    analyses its corpus meanwhile (`index.writing`)."""
    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(fp32, bytes):
            source = Path(tmp) / "fp32.onnx"
            source.write_bytes(fp32)
        else:
            source = fp32
        spec = json.dumps(_quantize_spec(recipe))
        return _in_child("_quantize.py", [str(source)], "quantizing the ONNX model to int8", spec)


def _export_and_quantize_in_child(folder: Path, recipe: Int8Recipe) -> tuple[bytes, bytes]:
    """`export_fp32_onnx` then `quantize_int8`, in one fresh interpreter (`_quantize.py
    --from-weights`): the fp32 file and the int8 one. A failure of either is reported as the
    quantization's, with the child's last line."""
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        spec = json.dumps(_quantize_spec(recipe))
        data = _in_child("_quantize.py", [_FROM_WEIGHTS, str(folder), str(fp32)], f"exporting {folder} to ONNX and quantizing it to int8", spec)
        return fp32.read_bytes(), data


def _in_child(script: str, before: list[str], what: str, *after: str) -> bytes:
    """Run the file ``script`` beside this one by path, its arguments ``before``, an output file,
    ``after``; the bytes it wrote. By path and with ``-P``: the child imports nothing of querywise
    (the package's imports took half an export's CPU) and its folder is not put on sys.path."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model.onnx"
        done = subprocess.run(
            [sys.executable, "-P", str(Path(__file__).with_name(script)), *before, str(out), *after],
            env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True, check=False,
        )
        if done.returncode != 0 or not out.is_file():
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise RuntimeError(f"{what} failed: {lines[-1] if lines else f'exit {done.returncode}'}")
        return out.read_bytes()


def _weights_key(folder: Path) -> str:
    """The weights' sha256 (with the export recipe), read once per process while the file is
    unchanged: a cold int8 build asked three times (the fp32 file's name, the int8 file's, the
    model id), 0.08 CPU s each for the packaged model's 91 MB."""
    st = os.stat(folder / "model.safetensors")
    return _weights_digest(_EXPORT_RECIPE, str(folder / "model.safetensors"), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=8)
def _weights_digest(recipe: str, path: str, *stat: int) -> str:
    """`_weights_key` of the file at ``path`` as ``stat`` (inode, size, times) finds it, for the
    export ``recipe``: a file written again is hashed again."""
    digest = hashlib.sha256(recipe.encode())
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
