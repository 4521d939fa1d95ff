"""LoCoMo as `Dialogue`s for the long-term measurement (until `memlab.dialogues` ships its loader).

speaker_a's turns are the user's, speaker_b's the assistant's; ids are LoCoMo's ``dia_id``;
image turns keep their caption; evidence ids are split on ``;`` and spaces, as some are joined.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

from memlab.dialogues.model import Dialogue, Probe, Session
from memlab.messages import Message


def _when(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")


def load_locomo(path: Path) -> list[Dialogue]:
    out = []
    for sample in json.loads(Path(path).read_text(encoding="utf-8")):
        conv = sample["conversation"]
        a = conv["speaker_a"]
        numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
        sessions = []
        for n in numbers:
            started = _when(conv[f"session_{n}_date_time"])
            msgs = []
            for turn in conv[f"session_{n}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text = f"{text} [shares a photo: {turn['blip_caption']}]"
                role = "user" if turn["speaker"] == a else "assistant"
                msgs.append(
                    Message(role=role, content=text, id=turn["dia_id"], speaker=turn["speaker"], timestamp=started)
                )
            sessions.append(Session(f"S{n}", tuple(msgs), started))
        probes = tuple(
            Probe(
                id=f"{sample['sample_id']}:q{i}",
                question=qa["question"],
                answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                evidence=tuple(e for raw in qa.get("evidence", ()) for e in re.split(r"[;\s]+", raw) if e),
                category=str(qa["category"]),
            )
            for i, qa in enumerate(sample["qa"])
        )
        out.append(
            Dialogue(id=sample["sample_id"], sessions=tuple(sessions), probes=probes, user_id=sample["sample_id"])
        )
    return out
