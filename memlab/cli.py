"""Command line: `memlab run [overrides]` (Hydra), nothing but argument handling on top of the library."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from memlab import config
from memlab.errors import MemlabError

CONFIG_PATH = "conf"
USAGE = """usage: memlab COMMAND [ARGS]

commands:
  run [overrides...]   replay a dataset through the configured strategies (Hydra; -m to sweep)
"""


@hydra.main(version_base=None, config_path=CONFIG_PATH, config_name="config")
def _run(cfg: DictConfig) -> None:
    from memlab.experiment import run_experiment

    hydra_dir = Path(HydraConfig.get().runtime.output_dir)
    run_dir = Path(cfg.output_dir) if cfg.output_dir else hydra_dir
    try:
        result = run_experiment(cfg, run_dir)
    except MemlabError as e:
        _discard_if_empty(run_dir)
        print(f"memlab: error: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        if hydra_dir != run_dir:  # Hydra made its own run folder, unused when output_dir is set
            _discard_if_empty(hydra_dir)
    print(f"memlab: {result.metrics['calls']} calls; results in {result.run_dir}")


def _discard_if_empty(run_dir: Path) -> None:
    """Remove `run_dir` if empty, and below the current directory the empty folders made for it."""
    path, cwd = run_dir.resolve(), Path.cwd().resolve()
    under_cwd = cwd in path.parents
    while True:
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent
        if not under_cwd or path == cwd:
            return


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return
    command, rest = args[0], args[1:]
    if command == "run":
        config.register()
        sys.argv = ["memlab run", *rest]
        _run()
        return
    print(f"memlab: unknown command {command!r}\n{USAGE}", file=sys.stderr, end="")
    sys.exit(2)
