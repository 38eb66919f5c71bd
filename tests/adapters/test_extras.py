"""An optional extra that is not installed fails with the one command that installs it."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(("module", "needs", "extra"), [
    ("querywise.adapters.langchain", "langchain_core", "langchain"),
    ("querywise.adapters.llamaindex", "llama_index", "llamaindex"),
])  # fmt: skip
def test_a_missing_framework_names_the_pip_install_to_run(monkeypatch: pytest.MonkeyPatch, module: str, needs: str, extra: str) -> None:
    for name in [m for m in sys.modules if m in (needs, module) or m.startswith(needs + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, needs, None)  # as if not installed: importing it raises ModuleNotFoundError
    with pytest.raises(ModuleNotFoundError, match=rf'pip install "querywise\[{extra}\]"'):
        importlib.import_module(module)
