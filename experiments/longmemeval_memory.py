"""Peak memory of loading a LongMemEval file, beside parsing it whole with json.load (docs/datasets.md).

python experiments/longmemeval_memory.py [QUESTIONS [SESSIONS [POOL]]]

Writes a file in the official format whose haystacks draw SESSIONS sessions per question from a
shared POOL of filler sessions (as longmemeval_s/m do), then loads it in a fresh process each way.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from script_args import positive

TURNS, TURN_CHARS = 10, 600
WORDS = [
    "the",
    "a",
    "memory",
    "session",
    "user",
    "assistant",
    "travel",
    "recipe",
    "garden",
    "budget",
    "meeting",
    "weekend",
    "project",
    "code",
]


def _session(rng: random.Random) -> list[dict[str, str]]:
    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(TURN_CHARS // 6))

    return [{"role": ("user", "assistant")[i % 2], "content": text()} for i in range(TURNS)]


def write_file(path: Path, questions: int, sessions: int, pool: int) -> None:
    rng = random.Random(0)
    fillers = [_session(rng) for _ in range(pool)]
    items = []
    for q in range(questions):
        chosen = sorted(rng.sample(range(pool), sessions - 1))
        ids = [f"sharegpt_{i}_0" for i in chosen] + [f"answer_{q}_1"]
        bodies = [fillers[i] for i in chosen] + [_session(rng)]
        bodies[-1][0]["has_answer"] = True  # type: ignore[assignment]
        items.append(
            {
                "question_id": f"q{q}",
                "question_type": "single-session-user",
                "question": "What did I say?",
                "answer": "something",
                "question_date": "2023/06/01 (Thu) 10:00",
                "haystack_session_ids": ids,
                "haystack_dates": [f"2023/05/{1 + i % 28:02d} (Mon) 10:00" for i in range(sessions)],
                "haystack_sessions": bodies,
                "answer_session_ids": [f"answer_{q}_1"],
            }
        )
    path.write_text(json.dumps(items), encoding="utf-8")


LOAD = {
    "imports": "from memlab.dialogues import load_longmemeval; import json; data = None",
    "memlab": "from memlab.dialogues import load_longmemeval; data = list(load_longmemeval(PATH))",
    "json.load": "import json; data = json.load(open(PATH, encoding='utf-8'))",
}


def measure(path: Path, how: str) -> tuple[float, float]:
    """Peak resident MiB and seconds of one way of loading, in a fresh process."""
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over fork and exec, so a child would report this process's peak.
    code = (
        f"import re, time; PATH = {str(path)!r}; t = time.perf_counter(); {LOAD[how]}; "
        "seconds = time.perf_counter() - t; "
        "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)) / 1024, seconds)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("questions", nargs="?", type=positive, default=100)
    parser.add_argument("sessions", nargs="?", type=positive, default=50, help="sessions per question's haystack")
    parser.add_argument("pool", nargs="?", type=positive, default=800, help="filler sessions they are drawn from")
    args = parser.parse_args()
    questions, sessions, pool = args.questions, args.sessions, args.pool
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "longmemeval_like.json"
        write_file(path, questions, sessions, pool)
        size = path.stat().st_size / 2**20
        print(f"file: {size:.0f} MiB, {questions} questions x {sessions} sessions from a pool of {pool}")
        for how in LOAD:
            peak, seconds = measure(path, how)
            print(f"{how:>10}: peak {peak:.0f} MiB ({peak / size:.2f}x the file), {seconds:.1f} s")
