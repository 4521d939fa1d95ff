"""A 10 MB message costs memory once, not once per probe: the run's peak stays within 2x of the same run without it.

Each probe record kept the whole request's text, so 199 probes over a LoCoMo conversation holding a
10 MB message peaked at 8.2 GB (a string holding one emoji takes 4 bytes a character); records now
share the messages' own strings. Peak memory is the run's own, as `peak_memory` measures it: a child's
`ru_maxrss` would report this pytest worker's peak whenever that is the larger (the last test checks it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from peak_memory import measured_run

ROOT = Path(__file__).resolve().parents[2]
BIG_MESSAGE_CHARS = 10_000_000
PROBES = 40


def locomo_file(path: Path, big_message: bool) -> Path:
    """A LoCoMo-format conversation of 3 sessions and 40 questions; one message of 10 MB if `big_message`."""
    conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bob"}
    for s in range(1, 4):
        conversation[f"session_{s}_date_time"] = f"1:56 pm on {s} May, 2023"
        conversation[f"session_{s}"] = [
            {"speaker": "Ann" if t % 2 == 0 else "Bob", "dia_id": f"D{s}:{t + 1}", "text": f"Turn {t} of {s}: kites 🙂"}
            for t in range(20)
        ]
    if big_message:
        filler = "lorem ipsum dolor sit amet consectetur adipiscing elit "
        conversation["session_2"][4]["text"] = (filler * (BIG_MESSAGE_CHARS // len(filler) + 1))[:BIG_MESSAGE_CHARS]
    questions = [
        {
            "question": f"What about turn {q}?",
            "answer": "kites",
            "evidence": [f"D{1 + q % 3}:{1 + q % 20}"],
            "category": 4,
        }
        for q in range(PROBES)
    ]
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conversation, "qa": questions}]))
    return path


def peak_rss_mib(cwd: Path, *args: str) -> float:
    """`memlab run ARGS` in a child process; the peak resident set of the run (process and workers) in MiB."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}
    return measured_run(["run", *args], cwd=cwd, env=env).peak_mib


def test_a_10_mb_message_keeps_the_peak_within_twice_the_run_without_it(tmp_path: Path) -> None:
    peaks = {}
    for big in (False, True):
        data = locomo_file(tmp_path / f"big{big}.json", big)
        peaks[big] = peak_rss_mib(
            tmp_path, "dataset=locomo", f"dataset.path={data}", f"hydra.run.dir={tmp_path / str(big)}"
        )
    print(f"peak RSS: {peaks[False]:.0f} MiB without the message, {peaks[True]:.0f} MiB with it")
    assert peaks[True] <= 2 * peaks[False], peaks
    metrics = json.loads((tmp_path / "True" / "metrics.json").read_text())
    assert metrics["tokens.prompt.max"] > BIG_MESSAGE_CHARS / 10  # the message was sent, not dropped


LIMITED = """
import resource, sys
from memlab import cli, experiment  # imported before the limit
vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + 300 * 2**20,) * 2)  # 300 MB more address space than the imports took
cli.main(["run", "dataset=locomo", "dataset.path=" + sys.argv[1], "hydra.run.dir=" + sys.argv[2], "sim.workers=1"])
"""


def test_a_file_too_big_for_the_memory_here_is_refused_in_one_line(tmp_path: Path) -> None:
    turns = [{"speaker": "Ann", "dia_id": f"D1:{i + 1}", "text": f"turn {i} about kites"} for i in range(1_000_000)]
    conversation = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "8 May 2023", "session_1": turns}
    data = tmp_path / "huge.json"
    data.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conversation, "qa": []}]))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}
    run = subprocess.run(
        [sys.executable, "-c", LIMITED, str(data), str(tmp_path / "run")], env=env, capture_output=True, text=True
    )
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"memlab: error: {data}: {data.stat().st_size / 2**20:,.0f} MB does not fit in this machine's memory; "
        "split it into smaller files"
    ]
    assert not (tmp_path / "run").exists()


HELD_MIB = 1536
HOLDER = f"""
import sys
from peak_memory import measured_run
held = bytearray({HELD_MIB} * 2**20)
for page in range(0, len(held), 4096):  # every page resident
    held[page] = 1
print(measured_run(["run", "debug=default", "report.plots=false", "hydra.run.dir=" + sys.argv[1]]).peak_mib)
"""


def test_a_run_started_by_a_process_that_holds_much_memory_reports_its_own_peak(tmp_path: Path) -> None:
    """Linux gives a child the peak resident set of the process that started it (`ru_maxrss` over fork and exec):
    a tiny run started beside 1.5 GB must still report the tiny run's peak, not the 1.5 GB."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), "CI": "1"}
    run = subprocess.run(
        [sys.executable, "-c", HOLDER, str(tmp_path / "run")], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    peak = float(run.stdout.split()[-1])
    assert 0 < peak < HELD_MIB / 3, peak
