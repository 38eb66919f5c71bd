"""The benchmark suite stays runnable: every registered benchmark imports, the quick ones run on tiny
inputs (results written to a temporary folder, never over bench/results), and the shared pieces
(registry, measures, splits, report) do what they say. Runs that need the public data sets skip
when ../shared/data is not there; runs that load the embedding model are `model` tests."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import DATA, ROOT
from bench.registry import BENCHMARKS, Benchmark, find

#: Modules under bench/<concern>/ that are not benchmarks: shared by some, or run by hand.
HELPERS = {
    "retrieval.synthetic_corpus", "retrieval.machine_peak", "retrieval.attention_rewrites", "retrieval.shared_products", "retrieval.peers_builders", "retrieval.peers_cli", "retrieval.peers_routing", "retrieval.same_hits", "retrieval.tune_space",
    "routing.router", "training.phrase_choice", "training.topic_shift", "triage.verb", "understanding.access_leaks", "understanding.followup_sets",
    "service.adversarial_checks", "service.adversarial_inputs", "service.adversarial_report", "service.adversarial_requests",
    "service.load_measure", "service.load_profile", "service.load_report", "service.load_setup", "service.faults_hostile",
}


def _modules_on_disk() -> set[str]:
    out = set()
    for p in (ROOT / "bench").glob("*/*.py"):
        if p.name != "__init__.py" and p.parent.name not in ("results", "work"):
            out.add(f"{p.parent.name}.{p.stem}")
    return out


def test_every_module_is_a_registered_benchmark_or_a_helper() -> None:
    registered = {b.name for b in BENCHMARKS}
    assert len(registered) == len(BENCHMARKS), "two entries share a name"
    assert _modules_on_disk() == registered | HELPERS


def test_names_and_aliases_designate_one_benchmark() -> None:
    names = {n for b in BENCHMARKS for n in (b.name, b.name.rsplit(".", 1)[-1], *b.aliases)}
    assert all(sum(b.matches(n) for b in BENCHMARKS) == 1 for n in names)
    assert find("adversarial").name == "understanding.crafted_inputs"  # its name before the split
    assert find("service_adversarial").name == "service.adversarial"
    assert find("scale").name == "retrieval.scale"
    assert find("bm25").name == "retrieval.bm25_engines"
    assert find("router").name == "routing.clinc150"
    with pytest.raises(KeyError):
        find("no-such-benchmark")


@pytest.mark.parametrize("bench", BENCHMARKS, ids=lambda b: b.name)
def test_benchmark_imports_and_has_a_main(bench: Benchmark) -> None:
    module = importlib.import_module(bench.module)
    assert callable(getattr(module, "main", None)), f"{bench.module} has no main()"
    assert module.__doc__, f"{bench.module} says nothing about what it measures"


def _smoke_params() -> list[object]:
    return [pytest.param(b, id=b.name, marks=[pytest.mark.model] if b.loads_model else [])
            for b in BENCHMARKS if b.smoke is not None]


@pytest.mark.skipif(not DATA.is_dir(), reason=f"public data sets not found at {DATA}")
@pytest.mark.parametrize("bench", _smoke_params())
def test_quick_benchmark_runs_on_tiny_inputs(bench: Benchmark, tmp_path: Path) -> None:
    env = {**os.environ, "QUERYWISE_BENCH_RESULTS": str(tmp_path), "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", bench.module, *(bench.smoke or ())], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    written = {p.stem for p in tmp_path.glob("*.json")}
    assert written and written <= set(bench.results), (written, bench.results)
    for stem in written:
        data = json.loads((tmp_path / f"{stem}.json").read_text(encoding="utf-8"))
        assert data["machine"]["command"] and data["machine"]["cores"]


def test_run_lists_the_registry() -> None:
    done = subprocess.run([sys.executable, "-m", "bench.run", "--list"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])})
    assert done.returncode == 0, done.stderr
    assert all(b.name in done.stdout for b in BENCHMARKS)


def test_run_gives_the_quick_arguments_and_records_the_command() -> None:
    from bench.run import arguments

    scale = find("scale")
    args = arguments(scale, quick=True, me="python -m bench.run --quick")
    assert args[: len(scale.quick or ())] == list(scale.quick or ())
    assert args[-2] == "--command" and args[-1].startswith("python -m bench.run --quick → python -m bench.retrieval.scale")
    assert arguments(find("third_party"), quick=False, me="x") == []


def test_measures_match_hand_computed_values() -> None:
    from bench.measures import cluster_se, evaluate, metric_self_check, ndcg_at_k, recall_at_k

    assert metric_self_check()["hand_case_ndcg@10"] == round((1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3)), 6)
    assert ndcg_at_k(["a"], {"a": 1}) == 1.0
    assert recall_at_k(["x", "a"], {"a": 1, "b": 1}) == 0.5
    assert evaluate({"q": ["a"]}, {"q": {"a": 1}, "r": {"b": 1}}) == {"ndcg@10": 0.5, "recall@100": 0.5}
    # two documents, residuals +1 and -1 around a mean of 0: sqrt(2 * 2 / 1) / 2
    assert cluster_se([("d1", 1.0), ("d2", -1.0)]) == pytest.approx(math.sqrt(4) / 2)


def test_splits_are_by_hash_and_stable() -> None:
    from bench.datasets import SPLITS, cast2019_split, doc2dial_split

    parts = [doc2dial_split(f"doc-{i}") for i in range(1000)]
    assert set(parts) == set(SPLITS)
    assert 0.5 < parts.count("train") / 1000 < 0.7
    assert cast2019_split("31_1") == cast2019_split("31_9")  # by topic, never by turn


def test_publish_renders_the_markdown_from_the_json_written(tmp_path: Path) -> None:
    from bench.report import publish

    seen: list[dict[str, object]] = []

    def render(d: dict[str, object]) -> str:
        seen.append(d)
        return f"rows: {d['rows']}"

    path = publish("thing", {"rows": (1, 2)}, command="python -m bench.x", render=render, folder=tmp_path)
    assert json.loads(path.read_text())["machine"]["command"] == "python -m bench.x"
    assert seen[0]["rows"] == [1, 2]  # what the file holds (a list), not the tuple passed in
    assert (tmp_path / "thing.md").read_text() == "rows: [1, 2]\n"
