"""A completion TAB answers as Hydra's completion did, without importing the lab (memlab.completion)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.core_plugins.bash_completion import BashCompletion
from hydra._internal.utils import create_config_search_path

from memlab import cli, completion, config

BIN = Path(sys.executable).parent
# What a TAB may import of memlab: the entry point and the completion module (and their package).
TAB_MODULES = {"memlab", "memlab.launch", "memlab.completion"}
LINES = (
    "con",
    "context=s",
    "context=trim context.",
    "context=trim context.strategy.",
    "context=trim context.strategy.keep_first=",
    "memory=summarize memory.strategy.",
    "agent_memory=hybrid agent_memory.compressor.",
    "store=sqlite store.",
    "longterm=locomo longterm.",
    "dataset=locomo dataset.",
    "sim.max_d",
    "tokenizer=",
    "eval.",
    "experiment=",
    "experiment/",
    "+hooks@hooks.summarization=",
    "~con",
    "hydra/",
    "hydra/launcher=",
    "hydra.job.chdir=",
    "-m context=trim,none context.k",
)


@pytest.fixture
def key_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The key tree `memlab run -sc install=bash` writes, under a cache folder of this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    completion.read_key_tree.cache_clear()
    yield cli.write_key_tree()
    completion.read_key_tree.cache_clear()


def test_a_tab_answers_as_hydras_completion(key_tree: Path) -> None:
    """Hydra's BashCompletion composes the config for each line; the cached key tree must give the same words."""
    config.register()
    hydra = BashCompletion(ConfigLoaderImpl(config_search_path=create_config_search_path(cli.CONFIG_PATH)))
    for line in LINES:
        assert completion.complete(line) == sorted(hydra._query(config_name="config", line=line)), line


def test_a_tab_imports_no_config_code(key_tree: Path, tmp_path: Path) -> None:
    """The `memlab` script on TAB: its imports (PYTHONPROFILEIMPORTTIME) hold no Hydra, OmegaConf, numpy or lab,
    nor `typing` (~10% of a TAB: memlab and memlab.completion import it for the type checker only)."""
    env = {**os.environ, "COMP_LINE": "memlab run context=trim context.st", "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        [BIN / "memlab", "-sc", "query=bash"], capture_output=True, text=True, env=env, cwd=tmp_path, check=True
    )
    assert done.stdout.split() == ["context.strategy."]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "memlab.completion" in imported  # the probe did see the TAB's imports
    assert imported.isdisjoint({"hydra", "omegaconf", "numpy", "yaml", "tiktoken", "typing"}), sorted(imported)
    assert {m for m in imported if m.startswith("memlab")} <= TAB_MODULES


def test_the_command_words_are_the_clis_commands() -> None:
    assert ("run", *cli.COMMANDS) == completion.COMMAND_WORDS
