"""experiments/scale.py: the long dialogues it writes, and what it measures of a child process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import scale

from memlab.dialogues import load_jsonl


def test_the_long_dialogue_is_n_distinct_messages_of_two_sentences_user_first(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(scale.dialogue(300)) + "\n", encoding="utf-8")
    (dialogue,) = load_jsonl(path)
    messages = list(dialogue.messages())
    assert [m.role for m in messages] == ["user", "assistant"] * 150
    assert len({m.text for m in messages}) == 300 and all(m.text.count(". ") == 1 for m in messages)


def test_the_long_message_has_at_least_its_characters_and_a_reply(tmp_path: Path) -> None:
    path = tmp_path / "message.jsonl"
    path.write_text(json.dumps(scale.long_message(5_000)) + "\n", encoding="utf-8")
    (dialogue,) = load_jsonl(path)
    user, reply = dialogue.messages()
    assert (user.role, reply.role) == ("user", "assistant") and 5_000 <= len(user.text) < 5_100


def test_a_childs_cpu_and_peak_are_read_in_seconds_and_mib(tmp_path: Path) -> None:
    """A child that holds 200 MiB and computes for 0.3 CPU s reports at least that (more when the process that
    starts it had a larger peak: tests/peak_memory.py; the script's own process stays small)."""
    code = (
        'import time; held = b"x" * (200 * 2**20); t = time.process_time()\nwhile time.process_time() - t < 0.3: pass'
    )
    wall, cpu, peak = scale.measured([sys.executable, "-c", code], {}, tmp_path)
    assert wall >= cpu >= 0.3 and peak >= 200
