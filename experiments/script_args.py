"""What the experiment scripts share: where the corpora are, and their command-line arguments.

The scripts run as ``python experiments/NAME.py``, whose folder is first on `sys.path`, so they import this
module by name (the tests put experiments/ on pytest's `pythonpath`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memlab.dialogues import Dialogue, load_locomo
from memlab.errors import MemlabError

SHARED = Path(os.environ.get("MEMLAB_SHARED", Path(__file__).resolve().parents[2] / "shared"))
LOCOMO_DEV7 = SHARED / "datasets" / "locomo" / "locomo_dev7.json"


def positive(text: str) -> int:
    """An argparse type: a count above 0."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count above 0")
    return int(text)


def locomo_argument(description: str) -> list[Dialogue]:
    """The LoCoMo file the command line names (default: dev7), loaded, or a usage error naming what is wrong."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("path", nargs="?", type=Path, default=LOCOMO_DEV7, help=f"a LoCoMo JSON file ({LOCOMO_DEV7})")
    path = parser.parse_args().path
    try:
        return load_locomo(path)
    except MemlabError as e:
        parser.error(str(e))
