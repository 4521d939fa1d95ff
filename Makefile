# The two commands of the README: `make demo` and `make test`. Each sets itself up from scratch.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True

RAY_VENV := .venv-ray

.PHONY: demo test lint bench profile figures figures-check install dev ray-env clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps keyed on pyproject.toml: a second `make demo` or `make test` skips the reinstall.
$(VENV)/.install.stamp: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.dev.stamp: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev,optuna,peers,mlflow,minilm]'
	touch $@

install: $(VENV)/.install.stamp

dev: $(VENV)/.dev.stamp

# The `ray` extra in a virtualenv of its own: hydra-ray-launcher pins cloudpickle<3, which joblib 1.6 refuses.
# tests/report/test_ray_launcher.py runs memlab from it (CI builds it in .ci/run).
$(RAY_VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(RAY_VENV)
	$(RAY_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(RAY_VENV)/bin/pip install --quiet -e '.[ray]'
	touch $@

ray-env: $(RAY_VENV)/.stamp

demo: install
	$(BIN)/memlab run experiment=demo

lint: dev
	$(BIN)/ruff check memlab tests experiments
	$(BIN)/ruff format --check memlab tests experiments
	$(BIN)/mypy
	$(BIN)/lint-imports

# pytest-xdist: PYTEST_WORKERS processes share the tests (docs/speed.md, "The test suite"); tests that share a
# resource or an expensive module fixture name an xdist_group, which --dist loadgroup keeps on one worker, and
# the slowest tests are collected first (tests/slow_first.py). PYTEST_WORKERS=0: one process.
# A hang (stop 33's CI ran into its 90-minute limit with three tests unreported): faulthandler_timeout prints every
# thread's stack once a test has run PYTEST_TIMEOUT - 300 seconds, --timeout (pytest-timeout, signal method) fails it
# at PYTEST_TIMEOUT, and --only-rerun runs a test that timed out once more (pytest-rerunfailures; a failed assert is
# never rerun). -raR lists each rerun test at the end, so a hang that passed its second time is still seen.
# PYTHONDONTWRITEBYTECODE is emptied for the run: where it is set (this machine's environment sets it), every one of the
# suite's ~150 Python processes compiled memlab's modules again and each worker rewrote every test module's asserts;
# the bytecode goes to the checkout's __pycache__ folders (git-ignored), as a plain `python` would write it.
PYTEST_WORKERS ?= 2
PYTEST_TIMEOUT ?= 900

test: lint
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadgroup -raR -o faulthandler_timeout=$$(($(PYTEST_TIMEOUT) - 300)) \
		--timeout $(PYTEST_TIMEOUT) --reruns 1 --only-rerun 'Failed: Timeout'

bench: dev
	$(BIN)/pytest tests/benchmarks --benchmark-enable --benchmark-only --benchmark-json=reports/benchmarks.json

profile: dev
	$(BIN)/python experiments/profile_replay.py

# Every figure README.md and docs/*.md quote: rerun what measures them (docs/figures/<source>.json), rewrite the
# marked figures in the docs. SOURCES=demo limits it to some sources. figures-check only compares (as
# tests/test_figures.py does in `make test`): no experiment runs.
figures: dev
	$(BIN)/python experiments/figures.py $(SOURCES)

figures-check: dev
	$(BIN)/python experiments/figures.py --check

clean:
	rm -rf $(VENV) $(RAY_VENV) reports/runs reports/sweeps .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
