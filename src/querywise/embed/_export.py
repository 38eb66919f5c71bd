"""The torch -> ONNX export of the packaged model, run as a child process by `export_fp32_onnx`.

    python -m querywise.embed._export MODEL_FOLDER OUT.onnx

It loads torch, transformers and sentence-transformers, exports, checks the graph against
sentence-transformers and writes the file; the process then exits and gives that memory back,
so the process that builds an index never holds torch.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from querywise.files import write_atomic

from ._onnx import FP32_MODEL_ID, OnnxEmbedder

__all__ = ["main"]

# An exported graph is kept only if it agrees with sentence-transformers this closely (cosine).
_EXPORT_TOLERANCE = 1e-5
_PROBE_TEXTS = (
    "ok",
    "Does the warranty cover a cracked headband?",
    # Longer than the 256-token limit, so truncation is checked too.
    "Parcels leave our warehouse within two working days; tracking links arrive by email. " * 20,
)


def main(argv: list[str]) -> None:
    """Export the model of folder ``argv[0]`` to the file ``argv[1]``."""
    folder, out = (Path(a) for a in argv)
    write_atomic(out, _export_and_check(folder))


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


if __name__ == "__main__":
    main(sys.argv[1:])
