"""Writes the packaged model's ONNX graph, as a child process of `export_fp32_onnx`.

    python -P .../_export.py MODEL_FOLDER OUT.onnx

Building the graph from the weights (`_graph.bert_onnx`: no torch) holds the weights several
times over (the file, the transposed matrices, the protobuf and its serialised bytes: about
530 MiB above the interpreter); in a child, that memory goes back when it exits, so the process
that builds an index peaks no higher on a first build than on later ones. The child runs this
file by path and loads `_graph` beside it the same way: `-m querywise.embed._export` imported the
whole package first, 0.6 of the child's 1.2 CPU s (`_graph` needs only numpy and onnx). Its
caller reads the file only once the child has exited cleanly, so a plain write is enough.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str]) -> None:
    """Write the ONNX graph of the model in folder ``argv[0]`` to the file ``argv[1]``."""
    folder, out = (Path(a) for a in argv)
    spec = importlib.util.spec_from_file_location("querywise_graph", Path(__file__).with_name("_graph.py"))
    if spec is None or spec.loader is None:
        raise ImportError("_graph.py is missing beside _export.py")
    graph = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = graph  # as an import would: what the module defines may look itself up
    spec.loader.exec_module(graph)
    out.write_bytes(graph.bert_onnx(folder))


if __name__ == "__main__":
    main(sys.argv[1:])
