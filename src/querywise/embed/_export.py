"""Writes the packaged model's ONNX graph, as a child process of `export_fp32_onnx`.

    python -m querywise.embed._export MODEL_FOLDER OUT.onnx

Building the graph from the weights (`_graph.bert_onnx`: no torch) holds the weights several
times over (the file, the transposed matrices, the protobuf and its serialised bytes: about
530 MiB above the interpreter); in a child, that memory goes back when it exits, so the process
that builds an index peaks no higher on a first build than on later ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

from querywise.files import write_atomic

from ._graph import bert_onnx

__all__ = ["main"]


def main(argv: list[str]) -> None:
    """Write the ONNX graph of the model in folder ``argv[0]`` to the file ``argv[1]``."""
    folder, out = (Path(a) for a in argv)
    write_atomic(out, bert_onnx(folder))


if __name__ == "__main__":
    main(sys.argv[1:])
