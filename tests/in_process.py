"""`memlab ARGS` in the test's own process: the imports are paid once a session, not once a command.

For tests where a new process adds nothing to what they check. Kept out of it: exit codes and messages of
the command line itself, kill and resume, completion, launchers that start processes of their own.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from memlab import cli


def memlab_main(*args: str) -> int:
    """`memlab ARGS` through `memlab.cli.main`; its exit status. Hydra's logging setup is undone after the call.

    Args:
        *args: The command line after `memlab` (``"run", "experiment=demo"``).

    Returns:
        The exit status the command line would give.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    argv = list(sys.argv)
    try:
        cli.main(list(args))
    except SystemExit as e:
        return int(e.code or 0)
    finally:
        sys.argv = argv
        root.handlers[:] = handlers
        root.setLevel(level)  # also clears the loggers' cached levels
    return 0


@contextmanager
def working_in(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """In `cwd`, with `env` set on top of the environment, for fixtures wider than a test (no `monkeypatch`).

    Args:
        cwd: The working folder for the block.
        env: Variables to set for the block; the old values come back after it.
    """
    old_cwd, old_env = Path.cwd(), {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
