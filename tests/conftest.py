"""Shared fixtures: paths to the real corpora beside the checkout, and composed configs."""

from __future__ import annotations

import copy
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

# ranx's numba kernels run as the Python they are written in: compiling them in a fresh venv costs about a
# minute of CPU, for cases of a few documents each. Set for the whole session, before anything imports numba:
# set by one test module only, a worker that imported ranx earlier mixed compiled and plain kernels.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

import pytest
from entries import registered
from hydra import compose, initialize_config_module
from hypothesis import settings
from in_process import memlab_main
from omegaconf import DictConfig
from replays import CONV26_LONGTERM
from slow_first import slow_first
from xdist_groups import name_groups

from memlab import bpe_cache
from memlab.dialogues import load_locomo, load_tau_bench

# Hypothesis fails an example that runs past a deadline (200 ms unless a test says otherwise): under CI's load a first
# example that loaded a tokenizer took longer (tests/memory/test_composed.py, Dec 8), a failure of the machine, not of
# the code. Speed is measured by the benchmarks, never asserted here.
settings.register_profile("memlab", deadline=None)
settings.load_profile("memlab")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMLAB_SHARED", ROOT.parent / "shared"))
LOCOMO = SHARED / "datasets" / "locomo" / "locomo_dev7.json"
TAU_BENCH = SHARED / "datasets" / "tau_bench" / "airline_gpt4o_dev150.json"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Timing tests (fixture `benchmark` or `timing`) only under --benchmark-enable (make bench), else deselected.

    Deselected rather than skipped, so `make test` neither runs their workload once (what a disabled
    `benchmark` does) nor builds their fixtures; the plain tests in tests/benchmarks still run. The slowest
    tests go first (tests/slow_first.py); grouped tests carry their group (tests/xdist_groups.py).
    """
    name_groups(config, items)
    slow_first(items)
    if config.getoption("benchmark_enable"):
        return
    timed = {item for item in items if {"benchmark", "timing"} & set(getattr(item, "fixturenames", ()))}
    if timed:
        config.hook.pytest_deselected(items=[item for item in items if item in timed])
        items[:] = [item for item in items if item not in timed]


@pytest.fixture(scope="session", autouse=True)
def _memlab_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """$MEMLAB_CACHE, memlab's caches (tiktoken's parsed ranks, the configs' response caches), in this session's
    temporary folder: tests never write ~/.cache/memlab or the checkout's .memlab-cache.

    xdist's workers share the run's folder (entries are written atomically), so the session parses each
    encoding once; subprocesses inherit the variable.
    """
    root = tmp_path_factory.getbasetemp()
    folder = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "memlab-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(bpe_cache.CACHE_ENV, str(folder))
        yield folder


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"corpus not found at {path} (set MEMLAB_SHARED to the folder holding datasets/)")
    return path


@pytest.fixture
def shared_corpora(monkeypatch: pytest.MonkeyPatch) -> Path:
    """MEMLAB_SHARED set for configs that read the corpora through it (experiments: ../shared by default)."""
    monkeypatch.setenv("MEMLAB_SHARED", str(SHARED))
    return SHARED


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    return _require(LOCOMO)


@pytest.fixture(scope="session")
def tau_bench_path() -> Path:
    return _require(TAU_BENCH)


@pytest.fixture(scope="session")
def corpus_texts(locomo_path: Path, tau_bench_path: Path) -> list[str]:
    """Every distinct message text of the LoCoMo and tau-bench test corpora, as their loaders read them."""
    dialogues = [*load_locomo(locomo_path), *load_tau_bench(tau_bench_path)]
    return list(dict.fromkeys(m.text for d in dialogues for session in d.sessions for m in session.messages))


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Any]:
    """`shared_run(*overrides)`: the result of a real run of the composed config, run once per process for every
    test that asks for the same overrides (tests/replays.py): tests only read its records and its folder."""
    from memlab.experiment import run_experiment

    done: dict[tuple[str, ...], Any] = {}

    def _run(*overrides: str) -> Any:
        if overrides not in done:
            registered()
            with initialize_config_module(config_module="memlab.conf", version_base=None):
                cfg = compose(config_name="config", overrides=list(overrides))
            done[overrides] = run_experiment(cfg, tmp_path_factory.mktemp("shared_run"))
        return done[overrides]

    return _run


@pytest.fixture(scope="session")
def conv26_longterm_run(locomo_path: Path, shared_run: Callable[..., Any]) -> Path:
    """The run folder of `replays.CONV26_LONGTERM` on the LoCoMo corpus (`shared_run`)."""
    return Path(shared_run(*CONV26_LONGTERM, f"dataset.path={locomo_path}").run_dir)


@pytest.fixture(scope="session")
def openai_server_module() -> ModuleType:
    """tests/llm/openai_server.py (the local OpenAI-compatible server) for tests outside tests/llm."""
    spec = importlib.util.spec_from_file_location("memlab_test_openai_server", ROOT / "tests/llm/openai_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# make_config's configs by their overrides.
_COMPOSED: dict[tuple[str, ...], DictConfig] = {}


@pytest.fixture
def make_config() -> Callable[..., DictConfig]:
    """Compose the app's config with overrides, as `memlab run` would.

    Each set of overrides is composed once a worker (a compose costs ~0.1 CPU s) and each call gets a deep copy,
    so that no test sees what another changed.
    """
    registered()

    def _compose(*overrides: str) -> DictConfig:
        if overrides not in _COMPOSED:
            with initialize_config_module(config_module="memlab.conf", version_base=None):
                _COMPOSED[overrides] = compose(config_name="config", overrides=list(overrides))
        return copy.deepcopy(_COMPOSED[overrides])

    return _compose


@pytest.fixture
def memlab_cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., int]:
    """`memlab_cli(*args) -> exit status`: `memlab ARGS` in this process, so its imports are paid once a session.

    sys.argv and HYDRA_FULL_ERROR come back at the end of the test, Hydra's logging setup after each call
    (tests/in_process.py).
    """
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    return memlab_main


@pytest.fixture
def memlab_run_err(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str]]:
    """`memlab_run_err(*args) -> (exit status, stderr)`: `memlab run ARGS` in this process, from `tmp_path`.

    For what the command prints and returns when it stops at start; no HYDRA_FULL_ERROR, as a user runs it.
    """
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.chdir(tmp_path)

    def _run(*args: str) -> tuple[int, str]:
        capfd.readouterr()
        status = memlab_main("run", *args)
        return status, capfd.readouterr().err

    return _run


@pytest.fixture
def timing(benchmark: Any) -> Any:
    """pytest-benchmark's `benchmark`, for a test that only times: skipped unless `--benchmark-enable` (make bench).

    It lives here, beside the other shared fixtures, so that any test folder may time a step.
    """
    if benchmark.disabled:
        pytest.skip("a timing run: make bench")
    return benchmark
