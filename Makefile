# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNS_ROOT ?= runs
PORT ?= $(or $(CURATOR_PORT),8050)

.PHONY: run test test-fast install lint demo browser clean bench guard

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The digits demo run: 10% injected label noise, so there is something to find.
# Re-running reuses every finished step.
demo: $(STAMP)
	$(BIN)/curator pipeline --dataset digits --inject-noise 0.1 --seed 0 --out $(RUNS_ROOT)/demo
	$(BIN)/curator evaluate $(RUNS_ROOT)/demo

# Build the demo, then serve the app on http://127.0.0.1:$(PORT)/curate/demo
run: demo
	$(BIN)/curator serve --runs-root $(RUNS_ROOT) --port $(PORT)

# Debian's Chromium and ChromeDriver for the browser tests (tools that download their own
# browser cannot work offline). Without root or apt-get, the browser tests skip and say why.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      chromium chromium-driver >/dev/null; \
	  else echo "note: chromium/chromium-driver missing; browser tests will be skipped"; fi; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# OPENBLAS_CORETYPE: one BLAS kernel on every x86-64 CPU, for the golden values (tests/conftest.py).
# Two pytest workers, a test file each at a time (--dist loadfile: a file's module fixtures,
# its served runs and its browser, are built once; the Redis tests stay in one file, on one
# worker): much of a test's time is waiting on a subprocess, a server or the browser, and
# the other worker uses it (docs/benchmarks.md, "The suite's time"). Files are handed out in
# the order tests/conftest.py gives them, the longest first. TEST_WORKERS=0 runs them in
# this process.
TEST_WORKERS ?= 2
test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	OPENBLAS_CORETYPE=Haswell $(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The unit tests alone, after ruff: tests/unit holds the tests that need no run on disk, no
# subprocess, no ../shared/data and no server, browser or Redis (tests/README.md), so this
# is the check to run while editing; `make test` runs them with the integration tests.
test-fast: $(STAMP)
	$(BIN)/ruff check .
	OPENBLAS_CORETYPE=Haswell $(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests/unit

# The regression guard: what earlier work won (the Curate page's speed as ratios, the
# findings' and the detection's figures, start-up), each against its floor in
# bench/floors.toml; fails when one is past it (bench/regression_guard.py). About 6 minutes here.
guard: $(STAMP) browser
	OPENBLAS_CORETYPE=Haswell PYTHONPATH=. $(BIN)/python -m bench.regression_guard

bench: $(STAMP)
	PYTHONPATH=. $(BIN)/python -m bench.dbscan
	PYTHONPATH=. $(BIN)/python -m bench.tsne
	PYTHONPATH=. $(BIN)/python -m bench.extract
	PYTHONPATH=. $(BIN)/python -m bench.detection
	PYTHONPATH=. $(BIN)/python -m bench.ui_latency --run runs/bench-cifar10n
	PYTHONPATH=. $(BIN)/python -m bench.train
	PYTHONPATH=. $(BIN)/python -m bench.train_cifar
	PYTHONPATH=. $(BIN)/python -m bench.pipeline_time
	PYTHONPATH=. $(BIN)/python -m bench.cli_start
	PYTHONPATH=. $(BIN)/python -m bench.similar_search

clean:
	rm -rf $(VENV) .pytest_cache
