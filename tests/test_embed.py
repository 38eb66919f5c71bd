"""querywise.embed against the real packaged model (a few seconds to load, once per module)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from querywise.embed import (
    EMBEDDER_KINDS,
    INT8_DEFAULT,
    INT8_VARIANTS,
    CachedEmbedder,
    Embedder,
    OnnxEmbedder,
    ProgressCallback,
    SentenceTransformerEmbedder,
    TokenWindow,
    Vectors,
    count_over_window,
    int8_key,
    int8_model_id,
    load_embedder,
    model_dir,
)

SRC = Path(__file__).resolve().parents[1] / "src"

# Our own shop's sentences, of deliberately different lengths.
SENTENCES = [
    "Are the Halcyon 300 headphones foldable?",
    "Shipping",
    "Orders placed before 3 pm ship the same working day; weekend orders leave on Monday.",
    "The ear pads on my over-ear headphones are peeling after eight months, is that covered?",
    "Can I change the delivery address after the parcel has left the warehouse?",
    "Express shipping to Norway takes two to four days and costs extra because of customs checks "
    "at the border, which the carrier handles for you.",
    "noise cancelling",
    "Returned headphones must include the charging cable, the carry case and the original box.",
]


def _env_with_src() -> dict[str, str]:
    """The environment for a child Python that must import querywise, installed or not."""
    paths = [str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(batch_size=3)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Shared by the module so the ONNX export (a few seconds) happens once."""
    return tmp_path_factory.mktemp("querywise-cache")


@pytest.fixture(scope="module")
def onnx_embedder(cache_dir: Path) -> OnnxEmbedder:
    return OnnxEmbedder.fp32(export_dir=cache_dir / "models", batch_size=3)


@pytest.fixture(params=[pytest.param("torch", marks=pytest.mark.torch), "onnx"])
def embedder(
    request: pytest.FixtureRequest,
    torch_embedder: SentenceTransformerEmbedder,
    onnx_embedder: OnnxEmbedder,
) -> Embedder:
    return torch_embedder if request.param == "torch" else onnx_embedder


@pytest.mark.model
def test_rows_are_float32_unit_vectors(embedder: Embedder) -> None:
    vectors = embedder.embed(SENTENCES)
    assert isinstance(embedder, Embedder)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(SENTENCES), embedder.dim) == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.model
def test_empty_input_gives_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


@pytest.mark.model
def test_a_text_gets_its_own_vector_whatever_batch_it_is_in(embedder: Embedder) -> None:
    # batch_size=3 and mixed lengths: sorting by length moves texts across batches, so a row
    # written back to the wrong position would show up as a different vector here.
    together = embedder.embed(SENTENCES)
    for row, text in enumerate(SENTENCES):
        alone = embedder.embed([text])[0]
        np.testing.assert_allclose(together[row], alone, atol=1e-5, err_msg=text)
    reversed_order = embedder.embed(SENTENCES[::-1])
    np.testing.assert_allclose(reversed_order[::-1], together, atol=1e-5)


@pytest.mark.model
def test_progress_counts_every_text_once_per_batch(embedder: Embedder) -> None:
    steps: list[int] = []
    embedder.embed(SENTENCES, on_progress=steps.append)
    assert sum(steps) == len(SENTENCES)
    assert steps == [3, 3, 2]


@pytest.mark.model
@pytest.mark.torch
def test_the_onnx_graph_written_from_the_weights_agrees_with_torch(
    torch_embedder: SentenceTransformerEmbedder, onnx_embedder: OnnxEmbedder
) -> None:
    # The graph is written without torch (embed/_graph.py); sentence-transformers is the reference.
    # A text past the 256-token limit checks that both truncate at the same place.
    texts = ["ok", *SENTENCES, " ".join(SENTENCES * 8)]
    cosines = np.sum(torch_embedder.embed(texts) * onnx_embedder.embed(texts), axis=1)
    assert cosines.min() >= 1 - 1e-5


@pytest.mark.model
@pytest.mark.torch
def test_int8_is_made_locally_per_channel_stays_close_and_is_cached_beside_fp32(
    torch_embedder: SentenceTransformerEmbedder, onnx_embedder: OnnxEmbedder, cache_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "models").mkdir()
    for exported in (cache_dir / "models").iterdir():  # the fp32 export, so it is not made again
        shutil.copy(exported, tmp_path / "models")
    int8 = load_embedder("onnx-int8", cache_dir=tmp_path)
    assert int8.model_id == int8_model_id("all-MiniLM-L6-v2", int8_key(model_dir(), INT8_VARIANTS[INT8_DEFAULT]))
    texts = [*SENTENCES, " ".join(SENTENCES * 8)]
    together = int8.embed(texts)
    cosines = np.sum(torch_embedder.embed(texts) * together, axis=1)
    assert 0.95 < cosines.min() < 1 - 1e-4  # close to fp32 (one- and two-word texts drift most), and not fp32
    # A text's int8 vector is its own, whatever it is embedded with: a query alone at search gets
    # the vector the same text got in a build's batch.
    alone = np.vstack([int8.inner.embed([text]) for text in texts])  # type: ignore[attr-defined]
    np.testing.assert_allclose(alone, together, atol=1e-6)
    names = sorted(p.name for p in (tmp_path / "models").iterdir())
    assert [n.split("-")[4] for n in names] == ["fp32", "int8"]  # the int8 file is kept beside the export
    written = (tmp_path / "models" / names[1]).stat().st_mtime_ns
    load_embedder("onnx-int8", cache_dir=tmp_path)
    assert (tmp_path / "models" / names[1]).stat().st_mtime_ns == written


# What Python 3.12 and 3.13 install: the runtime without PyTorch (PyPI has only CUDA builds there).
NO_TORCH = "import sys\nfor name in ('torch', 'transformers', 'sentence_transformers'):\n    sys.modules[name] = None\n"


@pytest.mark.model
def test_a_build_embeds_with_sleeping_threads_and_the_same_vectors(onnx_embedder: OnnxEmbedder, cache_dir: Path) -> None:
    """A build's embedder lets ONNX Runtime's idle threads sleep (no CPU burnt spinning on a shared
    machine); a query's keeps the default spin while it runs; neither spins once a call returns
    (the search that follows needs the cores); both give the same vectors."""
    bulk, query = (load_embedder("onnx", cache_dir=cache_dir, bulk=flag) for flag in (True, False))
    inner = [e.inner if isinstance(e, CachedEmbedder) else e for e in (bulk, query)]
    assert [e.spinning for e in inner if isinstance(e, OnnxEmbedder)] == [False, True]
    options = [e._session.get_session_options() for e in inner if isinstance(e, OnnxEmbedder)]
    assert [o.get_session_config_entry("session.force_spinning_stop") for o in options] == ["1", "1"]
    texts = [*SENTENCES, " ".join(SENTENCES * 8)]
    assert np.array_equal(inner[0].embed(texts), onnx_embedder.embed(texts))


@pytest.mark.model
def test_the_onnx_export_and_search_need_no_torch(tmp_path: Path) -> None:
    """The default embedder's first export is written from the weights: torch is unimportable in
    the process that embeds and in the child module that writes the graph."""
    code = NO_TORCH + textwrap.dedent(
        f"""
        import runpy
        from pathlib import Path
        from querywise.embed import load_embedder, model_dir
        sys.argv = ["_export", str(model_dir()), {str(tmp_path / "child.onnx")!r}]
        runpy.run_module("querywise.embed._export", run_name="__main__")
        vectors = load_embedder("onnx", cache_dir=Path({str(tmp_path)!r})).embed(["Where is my parcel?"])
        assert vectors.shape == (1, 384), vectors.shape
        """
    )
    done = subprocess.run([sys.executable, "-c", code], env=_env_with_src(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (exported,) = (tmp_path / "models").glob("*.onnx")
    assert exported.read_bytes() == (tmp_path / "child.onnx").read_bytes()


def test_without_torch_the_torch_features_name_the_extra_to_install(tmp_path: Path) -> None:
    code = NO_TORCH + textwrap.dedent(
        f"""
        from pathlib import Path
        from querywise.embed import fine_tune_encoder, load_embedder
        from querywise.retrieve import CrossEncoderReranker
        (Path({str(tmp_path)!r}) / "config.json").write_text("{{}}")
        for what, call in [("the torch embedder", lambda: load_embedder("torch", cache_dir=None)),
                           ("fine-tuning an encoder", lambda: fine_tune_encoder([(f"t{{i}}", "a" if i % 2 else "b") for i in range(40)], Path({str(tmp_path)!r}) / "out")),
                           ("the cross-encoder reranker", lambda: CrossEncoderReranker(Path({str(tmp_path)!r})).scores("q", ["t"]))]:
            try:
                call()
            except ModuleNotFoundError as exc:
                print(exc)
            else:
                raise SystemExit(what + " ran without torch")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], env=_env_with_src(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert all(line.endswith('pip install "querywise[torch]"') for line in lines), lines
    assert [line.split(" needs ")[0] for line in lines] == ["the torch embedder", "fine-tuning an encoder (router-train)", "the cross-encoder reranker"]


@pytest.mark.model
def test_onnx_export_is_written_once_and_reused(
    onnx_embedder: OnnxEmbedder, cache_dir: Path
) -> None:
    (exported,) = (cache_dir / "models").iterdir()  # no temporary file left beside it
    written = exported.stat().st_mtime_ns
    again = OnnxEmbedder.fp32(export_dir=cache_dir / "models", batch_size=3)
    assert exported.stat().st_mtime_ns == written
    np.testing.assert_array_equal(again.embed(SENTENCES), onnx_embedder.embed(SENTENCES))


class Counting:
    """Passes through to a real embedder and remembers which texts reached it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.seen: list[str] = []

    def embed(
        self, texts: Sequence[str], *, on_progress: ProgressCallback | None = None
    ) -> Vectors:
        self.seen.extend(texts)
        return self.inner.embed(texts, on_progress=on_progress)


@pytest.mark.model
def test_the_window_is_counted_where_the_model_cuts(embedder: Embedder, tmp_path: Path) -> None:
    long = " ".join(SENTENCES * 4)  # ~ 400 word-pieces
    assert isinstance(embedder, TokenWindow) and embedder.window == 256
    short_count, long_count = embedder.token_counts(["Shipping", long])
    assert short_count == 3 and long_count > 256  # [CLS] shipping [SEP]
    assert count_over_window(embedder, [*SENTENCES, long]) == (1, 256)
    # Words past the window change nothing: the model read the first 256 tokens only.
    cut, longer = embedder.embed([long, long + " Volcanoes erupt lava and ash over the islands."])
    assert float(cut @ longer) > 1 - 1e-6
    with CachedEmbedder(embedder, tmp_path) as cache:
        assert count_over_window(cache, [long]) == (1, 256)  # the cache counts as its model does
    assert count_over_window(Counting(embedder), [long]) is None  # an embedder that does not say counts nothing


@pytest.mark.model
def test_cache_embeds_only_misses_and_survives_reopening(
    onnx_embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    counting = Counting(onnx_embedder)
    with CachedEmbedder(counting, tmp_path) as cache:
        first = cache.embed(SENTENCES[:5])
        assert counting.seen == SENTENCES[:5]

        counting.seen.clear()
        steps: list[int] = []
        again = cache.embed([*SENTENCES, SENTENCES[6]], on_progress=steps.append)
        assert counting.seen == SENTENCES[5:]  # the new texts once, the repeat not again
        assert sum(steps) == len(SENTENCES) + 1  # hits and repeats count, so a bar completes
        np.testing.assert_array_equal(again[:5], first)
        np.testing.assert_array_equal(again[6], again[-1])

    counting.seen.clear()
    with CachedEmbedder(counting, tmp_path) as reopened:
        np.testing.assert_array_equal(reopened.embed(SENTENCES), again[:-1])
    assert counting.seen == []


@pytest.mark.model
@pytest.mark.torch
def test_cache_keeps_models_apart(
    torch_embedder: SentenceTransformerEmbedder, onnx_embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    with CachedEmbedder(onnx_embedder, tmp_path) as cache:
        cache.embed(SENTENCES)
    counting = Counting(torch_embedder)
    with CachedEmbedder(counting, tmp_path) as cache:
        cache.embed(SENTENCES)
    assert counting.seen == SENTENCES


@pytest.mark.model
def test_cache_key_is_the_exact_text(onnx_embedder: OnnxEmbedder, tmp_path: Path) -> None:
    counting = Counting(onnx_embedder)
    with CachedEmbedder(counting, tmp_path) as cache:
        cache.embed(["Shipping"])
        cache.embed(["shipping", "Shipping "])
    assert counting.seen == ["Shipping", "shipping", "Shipping "]


def test_cache_is_intact_after_the_writer_is_killed(tmp_path: Path) -> None:
    # A writer that commits many small slices, killed without warning part-way through. The
    # stand-in embedder is deterministic and instant, so only the cache's own code is timed.
    writer = textwrap.dedent(
        f"""
        import hashlib, itertools, sys
        from pathlib import Path
        import numpy as np
        from querywise.embed import CachedEmbedder

        class Hashing:
            model_id, dim = "hashing/test", 384
            def embed(self, texts, *, on_progress=None):
                rows = [np.frombuffer(hashlib.shake_256(t.encode()).digest(1536), np.float32)
                        for t in texts]
                return np.nan_to_num(np.stack(rows))

        cache = CachedEmbedder(Hashing(), Path({str(tmp_path)!r}), commit_every=50)
        for n in itertools.count():
            cache.embed([f"text {{n}} {{i}}" for i in range(500)])
            if n == 2:
                print("ready", flush=True)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", writer], env=_env_with_src(), stdout=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None and process.stdout.readline() == "ready\n"
            time.sleep(0.2)
        finally:
            process.send_signal(signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL

    # closing(): a connection's own `with` ends a transaction, it does not close (Python 3.13 warns).
    with closing(sqlite3.connect(tmp_path / "embeddings.sqlite3")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        lengths = {n for (n,) in db.execute("SELECT DISTINCT length(vector) FROM vectors")}
        (rows,) = db.execute("SELECT count(*) FROM vectors").fetchone()
    assert lengths == {384 * 4}
    assert rows >= 1500


def test_unknown_kind_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown embedder kind 'bert'.*'torch', 'onnx'"):
        load_embedder("bert", cache_dir=tmp_path)  # type: ignore[arg-type]
    assert EMBEDDER_KINDS == ("torch", "onnx", "onnx-int8")


def test_importing_the_package_loads_no_heavy_module() -> None:
    code = (
        "import sys, querywise.embed;"
        "heavy = {'torch', 'sentence_transformers', 'onnxruntime', 'transformers'};"
        "sys.exit(sorted(heavy & set(sys.modules)) or 0)"
    )
    subprocess.run([sys.executable, "-c", code], env=_env_with_src(), check=True)


@pytest.mark.model
def test_load_embedder_caches_vectors_beside_the_export(
    onnx_embedder: OnnxEmbedder, cache_dir: Path
) -> None:
    embedder = load_embedder("onnx", cache_dir=cache_dir, batch_size=4)
    assert isinstance(embedder, CachedEmbedder) and isinstance(embedder, Embedder)
    assert embedder.model_id == onnx_embedder.model_id == "all-MiniLM-L6-v2/onnx-fp32"
    np.testing.assert_array_equal(embedder.embed(SENTENCES[:2]), onnx_embedder.embed(SENTENCES[:2]))
    embedder.close()
    assert len(list((cache_dir / "models").iterdir())) == 1
    assert (cache_dir / "embeddings.sqlite3").is_file()
