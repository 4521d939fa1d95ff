"""Probes in a team's own JSONL logs: loaded and validated line by line, and measured with long-term memory on."""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import memlab
from memlab.dialogues import load_jsonl
from memlab.errors import DatasetError
from memlab.sim import ProbeRecord

NURSE = {
    "id": "ana",
    "user_id": "ana",
    "sessions": [
        {
            "id": "s1",
            "started_at": "2024-03-01T09:00:00",
            "messages": [
                {"role": "user", "id": "a1", "content": "I work as a nurse at the city hospital."},
                {"role": "assistant", "content": "That sounds demanding. How are the shifts?"},
                {"role": "user", "id": "a3", "content": "I prefer night shifts because the ward is quiet."},
                {"role": "assistant", "content": "Good to know."},
            ],
        },
        {
            "id": "s2",
            "started_at": "2024-04-01T09:00:00",
            "messages": [
                {"role": "user", "id": "a5", "content": "Actually I changed jobs: I work as a paramedic now."},
                {"role": "assistant", "content": "Congratulations on the new job!"},
                {"role": "user", "content": "The weather has been rainy all week, and my cat hates it."},
                {"role": "assistant", "content": "Stay dry."},
            ],
        },
    ],
    "probes": [
        {
            "id": "ana-job",
            "question": "What do I do for a living?",
            "answer": "paramedic",
            "evidence": ["a5"],
            "superseded": ["a1"],
            "category": "update",
        },
        {
            "question": "Which shifts do I prefer?",
            "answer": "night shifts",
            "evidence": ["a3"],
            "asked_at": "2024-05-01",
        },
        {"question": "What does my cat hate?", "answer": "rain", "evidence": ["L1:6"], "category": "pets"},
    ],
}
CHAT = {
    "messages": [
        {"role": "system", "content": "You are a cooking assistant."},
        {"role": "user", "content": "My sister Lena is allergic to peanuts."},
        {"role": "assistant", "content": "I will keep peanuts out of her recipes."},
        {"role": "user", "content": "I bake sourdough bread every Sunday."},
        {"role": "assistant", "content": "Lovely habit."},
    ],
    "probes": [
        {"question": "What is Lena allergic to?", "answer": "peanuts", "evidence": ["L2:1"]},
        {"question": "When do I bake bread?", "answer": "every Sunday", "evidence": ["L2:3"]},
    ],
}


def write(path: Path, *rows: Any) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_probes_load_with_their_evidence_category_superseded_and_time(tmp_path: Path) -> None:
    ana, chat = load_jsonl(write(tmp_path / "logs.jsonl", NURSE, CHAT))
    job, shifts, cat = ana.probes
    assert (job.id, job.question, job.answer, job.evidence, job.category) == (
        "ana-job",
        "What do I do for a living?",
        "paramedic",
        ("a5",),
        "update",
    )
    assert job.metadata == {"superseded": ("a1",)} and job.asked_at is None
    assert (shifts.id, shifts.category, shifts.asked_at) == ("ana:q1", "question", datetime(2024, 5, 1))
    assert cat.evidence == ("L1:6",)  # a message without an id is named by its default id
    assert [p.evidence for p in chat.probes] == [("L2:1",), ("L2:3",)]  # index 0 is the system prompt


def test_lines_without_probes_load_as_before(tmp_path: Path) -> None:
    [plain] = load_jsonl(write(tmp_path / "plain.jsonl", {"messages": CHAT["messages"]}))
    assert plain.probes == ()


def _with_probe(**probe: Any) -> dict[str, Any]:
    return {**CHAT, "probes": [{"question": "What is Lena allergic to?", **probe}]}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({**CHAT, "probes": {"question": "x"}}, r":2: probes: expected a list, got an object$"),
        ({**CHAT, "probes": [{"answer": "x"}]}, r':2: probes\[0\]: missing key "question" \(expected a string\)$'),
        (
            _with_probe(evidences=["L2:1"]),
            r":2: probes\[0\]\.evidences: unknown key; a probe has question, answer, evidence,",
        ),
        (_with_probe(evidence="L2:1"), r":2: probes\[0\]\.evidence: expected a list, got a string$"),
        (_with_probe(evidence=[1]), r":2: probes\[0\]\.evidence\[0\]: expected a string, got an integer$"),
        (
            _with_probe(evidence=["L2:1", "D1:3"]),
            r":2: probes\[0\]\.evidence\[1\]: no message 'D1:3' in this conversation; "
            r"its message ids: L2:1, L2:2, L2:3, L2:4$",
        ),
        (_with_probe(evidence=["L2:0"]), r"evidence\[0\]: no message 'L2:0'"),  # the system prompt is not a turn
        (
            _with_probe(evidence=["L2:1"], superseded=["L2:1"]),
            r":2: probes\[0\]\.superseded\[0\]: 'L2:1' is also evidence; superseded names the older statements",
        ),
        (_with_probe(answer=3), r":2: probes\[0\]\.answer: expected a string, got an integer$"),
        (_with_probe(asked_at="Sunday"), r":2: probes\[0\]\.asked_at: cannot read 'Sunday'; expected ISO 8601"),
        (
            {**CHAT, "probes": [{"question": "a", "id": "q"}, {"question": "b", "id": "q"}]},
            r":2: probes\[1\]\.id: 'q' is also the id of probes\[0\]; probe ids are unique in the file ",
        ),
    ],
)
def test_a_bad_probe_names_file_line_and_key(tmp_path: Path, row: Any, message: str) -> None:
    path = write(tmp_path / "bad.jsonl", {"messages": CHAT["messages"]}, row)
    with pytest.raises(DatasetError, match=message) as e:
        load_jsonl(path)
    assert str(e.value).startswith(f"{path}:2: ")


def test_a_probe_id_another_line_has_is_refused(tmp_path: Path) -> None:
    """questions.csv, questions.jsonl and retrievals.* name a question by its id alone: it is unique in the file."""
    given = {**CHAT, "probes": [{"question": "a", "id": "ana-job"}]}
    with pytest.raises(DatasetError, match=r":2: probes\[0\]\.id: 'ana-job' is also a probe id on line 1; "):
        load_jsonl(write(tmp_path / "given.jsonl", NURSE, given))
    lena = {**CHAT, "id": "lena", "probes": [{"question": "a", "id": "ana:q1"}]}
    default = {**CHAT, "id": "ana", "probes": [{"question": "a"}, {"question": "b"}]}  # ana:q1 is on line 1
    with pytest.raises(DatasetError, match=r":2: probes\[1\]: its default id 'ana:q1' is also a probe id on line 1"):
        load_jsonl(write(tmp_path / "default.jsonl", lena, default))


UNIQUE = "probe ids are unique in the file (questions.csv, questions.jsonl and retrievals.* name a question by it)"


@pytest.mark.parametrize(
    ("probes", "said"),
    [
        (
            [{"question": "a", "id": "ana:q1"}, {"question": "b"}],
            "probes[1]: its default id 'ana:q1' is taken by probes[0]'s given id; "
            "give probes[1] an id of its own or probes[0] another",
        ),
        (
            [{"question": "a"}, {"question": "b", "id": "ana:q0"}],
            "probes[1].id: 'ana:q0' is also the default id of probes[0]; give probes[1] another id or probes[0] one",
        ),
    ],
)
def test_a_probe_id_of_the_same_line_says_which_of_the_two_is_a_default(
    tmp_path: Path, probes: list[dict[str, str]], said: str
) -> None:
    """The defect: a default id equal to a given one was blamed on ``probes[1].id``, a key probes[1] lacks."""
    path = write(tmp_path / "probes.jsonl", {**CHAT, "id": "ana", "probes": probes})
    with pytest.raises(DatasetError) as e:
        load_jsonl(path)
    assert str(e.value) == f"{path}:1: {said}; {UNIQUE}"


def test_every_output_names_a_question_by_the_same_id(tmp_path: Path) -> None:
    """The defect: a probe whose id does not start with its dialogue's was ``job-2`` in questions.csv and
    questions.jsonl but ``ana/job-2`` in retrievals.jsonl, .trec and .qrels."""
    given = {
        **NURSE,
        "probes": [*NURSE["probes"], {"id": "job-2", "question": "My job?", "answer": "x", "evidence": ["a5"]}],
    }
    path = write(tmp_path / "logs.jsonl", given, CHAT)
    args = [
        f"dataset.path={path}",
        "dataset=jsonl",
        "longterm=chat",
        "context=trim",
        "sim.workers=1",
        "eval.answers=true",
    ]
    run_dir = memlab.run(args, tmp_path / "run").run_dir
    expected = ["ana-job", "ana:q1", "ana:q2", "job-2", "line-2:q0", "line-2:q1"]
    with (run_dir / "questions.csv").open(newline="") as f:
        assert [row["probe"] for row in csv.DictReader(f)] == expected
    jsonl = [json.loads(line) for line in (run_dir / "retrievals.jsonl").read_text().splitlines()]
    assert [line["qid"] for line in jsonl] == expected
    answered = [json.loads(line)["question_id"] for line in (run_dir / "questions.jsonl").read_text().splitlines()]
    assert answered and set(answered) <= set(expected)
    for name in ("retrievals.trec", "retrievals.qrels"):
        qids = {line.split()[0] for line in (run_dir / name).read_text().splitlines()}
        assert qids == set(expected), name


def _recall(evidence: tuple[str, ...], retrieved: list[list[str]], k: int) -> float:
    cited = {turn for memory in retrieved[:k] for turn in memory}
    return len(set(evidence) & cited) / len(evidence)


def test_long_term_recall_and_newer_first_come_from_the_probes(tmp_path: Path) -> None:
    path = write(tmp_path / "logs.jsonl", NURSE, CHAT)
    result = memlab.run([f"dataset.path={path}", "dataset=jsonl", "longterm=chat", "sim.workers=1"], tmp_path / "run")
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    probes = [r for r in result.records if isinstance(r, ProbeRecord)]
    assert [r.probe.id for r in probes] == ["ana-job", "ana:q1", "ana:q2", "line-2:q0", "line-2:q1"]
    ranked = {r.probe.id: r.results["longterm.retrieved_evidence"] for r in probes}
    for k in (1, 5, 10):  # recomputed from the ranked memories of the run's own records
        expected = sum(_recall(r.probe.evidence, ranked[r.probe.id], k) for r in probes) / len(probes)
        assert metrics[f"longterm.recall@{k}"] == pytest.approx(expected, abs=1e-6)
    assert metrics["longterm.questions"] == 5 and metrics["longterm.recall@10"] == 1.0
    assert metrics["longterm.questions.cat_update"] == 1 and metrics["longterm.questions.cat_question"] == 3
    job = ranked["ana-job"]
    first_new = next(i for i, m in enumerate(job) if "a5" in m)
    first_old = next(i for i, m in enumerate(job) if "a1" in m)
    assert metrics["longterm.newer_first.probes"] == 1
    assert metrics["longterm.newer_first"] == float(first_new < first_old)
    questions = (result.run_dir / "questions.csv").read_text()
    assert "ana-job,update,What do I do for a living?,paramedic,a5" in questions
