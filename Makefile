# The two commands of the README: `make demo` and `make test`. Each sets itself up from scratch.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: demo test lint bench profile install dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install --quiet -e .

dev: $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,optuna,peers]'

demo: install
	$(BIN)/memlab run experiment=demo

lint: dev
	$(BIN)/ruff check memlab tests
	$(BIN)/ruff format --check memlab tests
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

bench: dev
	$(BIN)/pytest tests/benchmarks --benchmark-enable --benchmark-only --benchmark-json=reports/benchmarks.json

profile: dev
	$(BIN)/python experiments/profile_replay.py

clean:
	rm -rf $(VENV) reports/runs reports/sweeps .pytest_cache .mypy_cache .ruff_cache
