# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNS_ROOT ?= runs

.PHONY: run test install lint demo clean bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Build the digits demo run (10% injected label noise, so there is something to find),
# then print its summary and evaluation.
demo: $(STAMP)
	$(BIN)/curator pipeline --dataset digits --inject-noise 0.1 --seed 0 --out $(RUNS_ROOT)/demo
	$(BIN)/curator evaluate $(RUNS_ROOT)/demo

run: demo

lint: $(STAMP)
	$(BIN)/ruff check .

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -ra

clean:
	rm -rf $(VENV) .pytest_cache
