"""A dataset that waits for its test, for a test that acts while a `memlab run` of another process is in its run.

`dataset=jsonl dataset._target_=gated_data.gated dataset.path=FILE`, beside a FIFO ``FILE.gate`` the test made
(`os.mkfifo`): the run opens the FIFO as it reads its data, so the test's ``open(FILE.gate, "w")`` returns once the
run holds its folder and is loading, and the run reads on only when the test closes it. tests/ is on `pythonpath`
and on the PYTHONPATH such a test gives `memlab run`, so both import this module by its name.
"""

from __future__ import annotations

from memlab.dialogues import load_jsonl
from memlab.dialogues.model import Dialogue


def gated(path: str, max_dialogues: int | None = None) -> list[Dialogue]:
    """The JSONL dataset at `path`, read once the test has opened and closed the gate beside it (a FIFO)."""
    with open(path + ".gate") as gate:  # blocks until the test opens the gate for writing
        gate.read()  # and until it closes it
    return load_jsonl(path, max_dialogues)
