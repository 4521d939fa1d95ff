"""The evaluation scripts of docs/backends.md run as written on a LoCoMo conversation's start and print the figures.

Each script runs as `__main__` in the test's process (`runpy`): what is checked is what it prints, which a new
interpreter would not change; one would pay memlab's imports again and redo the text analysis the test's own
figures have just memoized.
"""

from __future__ import annotations

import json
import re
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memlab.dialogues import load_locomo
from memlab.embed import HashingEmbedder
from memlab.eval import evaluate_answers, evaluate_retrieval, evaluate_summaries
from memlab.llm import ExtractiveChatModel

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 3  # of the first conversation's 19: 58 of its 419 turns (embed_retrieval.py embeds them with MiniLM)


def _in_sessions(text: str) -> bool:
    """Whether every session a key (`session_4_summary`) or evidence list (`D4:2; D5:1`) names is kept."""
    return all(int(n) <= SESSIONS for n in re.findall(r"(?:session_|D)(\d+)", text))


@pytest.fixture(scope="module")
def one_conversation(locomo_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first LoCoMo conversation cut to its first `SESSIONS` sessions and the questions whose evidence is there."""
    sample = json.loads(locomo_path.read_text(encoding="utf-8"))[0]
    for part in ("conversation", "event_summary", "observation", "session_summary"):
        sample[part] = {key: value for key, value in sample[part].items() if _in_sessions(key)}
    sample["qa"] = [qa for qa in sample["qa"] if qa["evidence"] and _in_sessions(json.dumps(qa["evidence"]))]
    path = tmp_path_factory.mktemp("locomo") / "one.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    return path


@pytest.fixture
def run_script(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[[str, Path], list[str]]:
    """`run_script(name, corpus)`: the table rows (`| ... |` lines after the header and rule) a script prints."""

    def _run(name: str, corpus: Path) -> list[str]:
        script = ROOT / "experiments" / name
        monkeypatch.setattr(sys, "argv", [str(script), str(corpus)])
        capsys.readouterr()
        runpy.run_path(str(script), run_name="__main__")
        return [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")][2:]

    return _run


def test_summary_quality(one_conversation: Path, run_script: Callable[[str, Path], list[str]]) -> None:
    figures = evaluate_summaries(load_locomo(one_conversation))
    f = figures["extractive"]
    assert run_script("summary_quality.py", one_conversation)[0] == (
        f"| extractive | {f['sessions']:.0f} | {f['fact_recall']:.3f} | {f['rouge1_recall']:.3f} "
        f"| {f['rougeL_recall']:.3f} | {f['tokens']:.1f} |"
    )


@pytest.mark.xdist_group("minilm")  # with the minilm extra it embeds with MiniLM: the worker that has torch loaded
def test_embed_retrieval(one_conversation: Path, run_script: Callable[[str, Path], list[str]]) -> None:
    f = evaluate_retrieval(load_locomo(one_conversation), HashingEmbedder)
    rows = run_script("embed_retrieval.py", one_conversation)
    assert rows[0] == (
        f"| hashing (768, default) | {f['questions']:.0f} | {f['hit@1']:.3f} | {f['hit@5']:.3f} "
        f"| {f['hit@10']:.3f} | {f['mrr']:.3f} |"
    )
    assert rows[-1].startswith("| BM25 reference |")


def test_extractive_qa(one_conversation: Path, run_script: Callable[[str, Path], list[str]]) -> None:
    f = evaluate_answers(load_locomo(one_conversation), ExtractiveChatModel())
    assert run_script("extractive_qa.py", one_conversation) == [
        f"| {f['questions']:.0f} | {f['from_evidence']:.3f} | {f['judged_correct']:.3f} |"
    ]
