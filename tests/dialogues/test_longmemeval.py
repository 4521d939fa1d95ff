"""LongMemEval: the official file format loaded question by question, and its retrieval and answer files from a run."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import memlab
from memlab.dialogues import load_longmemeval
from memlab.dialogues.longmemeval import QUESTION_TYPES
from memlab.dialogues.source import HALF_PAIR, PROJECT_ROOT
from memlab.errors import DatasetError
from memlab.sim import ProbeRecord

SAMPLE = PROJECT_ROOT / "datasets" / "longmemeval_sample.json"
RAW: list[dict[str, Any]] = json.loads(SAMPLE.read_text(encoding="utf-8"))


def test_each_question_is_a_dialogue_of_its_haystack() -> None:
    dialogues = list(load_longmemeval(SAMPLE))
    assert [d.id for d in dialogues] == [q["question_id"] for q in RAW]
    for raw, d in zip(RAW, dialogues, strict=True):
        dates = [datetime.strptime(s, "%Y/%m/%d (%a) %H:%M") for s in raw["haystack_dates"]]
        in_time_order = sorted(zip(dates, raw["haystack_session_ids"], raw["haystack_sessions"], strict=True))
        assert [(s.started_at, s.id) for s in d.sessions] == [(t, i) for t, i, _ in in_time_order]
        for session, (_, sid, turns) in zip(d.sessions, in_time_order, strict=True):
            assert [(m.id, m.role, m.content) for m in session.messages] == [
                (f"{sid}_{n}", t["role"], t["content"]) for n, t in enumerate(turns, start=1)
            ]
        [probe] = d.probes
        assert (probe.id, probe.question, probe.category) == (raw["question_id"], raw["question"], raw["question_type"])
        assert probe.answer == str(raw["answer"]) and d.user_id == raw["question_id"]
        assert probe.asked_at == datetime.strptime(raw["question_date"], "%Y/%m/%d (%a) %H:%M")
    assert dialogues[2].sessions[0].id == "answer_2655b836_1"  # listed second, but earlier


def test_evidence_is_the_has_answer_turns_else_the_answer_sessions() -> None:
    probes = {d.id: d.probes[0] for d in load_longmemeval(SAMPLE)}
    labelled = probes["e47becba"]
    assert labelled.evidence == ("answer_e47becba_1_1",)  # turn 3 is marked has_answer: false
    assert labelled.metadata == {
        "abstention": False,
        "evidence_from": "has_answer",
        "evidence_sessions": ("answer_e47becba_1",),
    }
    assert probes["0f05491a"].evidence == ("answer_0f05491a_1_1", "answer_0f05491a_2_1")
    unlabelled = probes["7161e7e2"]  # no has_answer anywhere: every turn of the answer session
    assert unlabelled.evidence == ("answer_7161e7e2_1_1", "answer_7161e7e2_1_2")
    assert unlabelled.metadata["evidence_from"] == "answer_sessions"
    abstention = probes["e47becba_abs"]
    assert abstention.evidence == () and abstention.metadata["abstention"] is True
    assert abstention.metadata["evidence_sessions"] == ()
    assert probes["c4a1ceb8"].answer == "5"  # a number in the file


def test_a_session_in_several_haystacks_is_held_once() -> None:
    by_id: dict[str, list[Any]] = {}
    for d in load_longmemeval(SAMPLE):
        for s in d.sessions:
            by_id.setdefault(s.id, []).append(s.messages)
    assert len(by_id["sharegpt_f1_0"]) == 3
    for copies in by_id.values():
        assert all(c is copies[0] for c in copies)


def test_max_dialogues_and_question_types_stop_reading_early(tmp_path: Path) -> None:
    text = json.dumps(RAW[:3])
    broken = tmp_path / "broken.json"
    broken.write_text(text[:-1] + ', {"question_id": "x", "haystack_sessions": [[{"role": "us', encoding="utf-8")
    assert [d.id for d in load_longmemeval(broken, max_dialogues=3)] == [q["question_id"] for q in RAW[:3]]
    with pytest.raises(DatasetError, match=r"broken\.json: \[3\]: the JSON ends early \(is the file truncated\?\)$"):
        list(load_longmemeval(broken))
    kept = load_longmemeval(SAMPLE, question_types=["single-session-user", "knowledge-update"])
    assert [d.id for d in kept] == ["e47becba", "0f05491a", "e47becba_abs"]


def _one(**changes: Any) -> list[dict[str, Any]]:
    return [RAW[0], {**RAW[1], **changes}]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"questions": RAW}, r": expected a JSON list of LongMemEval questions \(the longmemeval_s\.json format\)$"),
        ([], r": no questions; expected a list of LongMemEval questions$"),
        (_one(question_id=None), r": \[1\]\.question_id: expected a string, got null$"),
        (
            _one(question_type="update"),
            r": \[1\]\.question_type: unknown type 'update'; expected one of single-session",
        ),
        (
            _one(question_date="Aug 10"),
            r": \[1\]\.question_date: cannot read 'Aug 10'; expected a date like 2023/05/20",
        ),
        (
            _one(question_date="9999/12/31 (Fri) 23:59"),
            r": \[1\]\.question_date: '9999/12/31 \(Fri\) 23:59' is too late: the replay's clock runs on from",
        ),
        (
            _one(haystack_dates=RAW[1]["haystack_dates"][:2]),
            r": \[1\]: haystack_session_ids, haystack_dates and haystack_sessions differ in length \(3, 2, 3\)",
        ),
        (
            _one(haystack_sessions=[[{"role": "system", "content": "x"}], [], []]),
            r": \[1\]\.haystack_sessions\[0\]\[0\]\.role: unknown role 'system'; expected user or assistant$",
        ),
        (
            _one(haystack_sessions=[[{"role": "user", "content": "x", "has_answer": "yes"}], [], []]),
            r": \[1\]\.haystack_sessions\[0\]\[0\]\.has_answer: expected true or false, got a string$",
        ),
        ({k: v for k, v in RAW[1].items() if k != "answer"}, r"missing key \"answer\""),
        (
            _one(haystack_session_ids=[], haystack_dates=[], haystack_sessions=[]),
            r": \[1\]\.haystack_sessions: no turns; expected at least one non-empty session$",
        ),
        (
            _one(haystack_sessions=[[], [], []]),
            r": \[1\]\.haystack_sessions: no turns; expected at least one non-empty session$",
        ),
    ],
)
def test_a_bad_file_names_the_question_and_key(tmp_path: Path, data: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data if not isinstance(data, dict) or "questions" in data else [data]), encoding="utf-8")
    with pytest.raises(DatasetError, match=message) as e:
        list(load_longmemeval(path))
    assert str(e.value).startswith(f"{path}: ")


def test_a_question_id_given_twice_is_named(tmp_path: Path) -> None:
    path = tmp_path / "twice.json"
    path.write_text(json.dumps([RAW[0], RAW[1], {**RAW[2], "question_id": RAW[0]["question_id"]}]), encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        list(load_longmemeval(path))
    assert str(e.value) == (
        f"{path}: [2].question_id: 'e47becba' is also the question_id of [0]; dialogue ids are unique: each names "
        "its own history in the store"
    )


def _repeated(session: int, again: list[dict[str, Any]] | None = None, **changes: Any) -> list[dict[str, Any]]:
    """RAW[1] with its haystack session `session` given again (`again`: with these turns), dated last."""
    q = RAW[1]
    return _one(
        haystack_session_ids=[*q["haystack_session_ids"], q["haystack_session_ids"][session]],
        haystack_dates=[*q["haystack_dates"], "2023/08/01 (Tue) 10:00"],
        haystack_sessions=[*q["haystack_sessions"], q["haystack_sessions"][session] if again is None else again],
        **changes,
    )


OTHER_TURNS = [{"role": "user", "content": "Something else."}]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (_repeated(1, OTHER_TURNS), "with other turns: its turn ids (sharegpt_f1_0_1, ...) would name two turns"),
        (_repeated(0), "and holds evidence, which would match the turns of both copies"),  # has_answer turns
        (
            _repeated(1, answer_session_ids=["sharegpt_f1_0"]),
            "and holds evidence, which would match the turns of both copies",
        ),
    ],
)
def test_a_session_id_repeated_in_a_haystack_with_other_turns_or_evidence_is_named(
    tmp_path: Path, data: list[dict[str, Any]], why: str
) -> None:
    """Turn ids are ``<session id>_<n>``: a repeat with other turns or with evidence lets one id name two turns."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    session = data[1]["haystack_session_ids"][-1]
    first = data[1]["haystack_session_ids"].index(session)
    with pytest.raises(DatasetError) as e:
        list(load_longmemeval(path))
    assert str(e.value) == (
        f"{path}: [1].haystack_session_ids[3]: {session!r} is also haystack_session_ids[{first}] of question "
        f"'0f05491a', {why}"
    )


def test_a_filler_session_repeated_at_another_date_loads(tmp_path: Path) -> None:
    """LongMemEval-S repeats 13 filler sessions in a haystack, same turns at another date (its issue #54): both play."""
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps(_repeated(1)), encoding="utf-8")
    d = list(load_longmemeval(path))[1]
    assert [s.id for s in d.sessions] == [*RAW[1]["haystack_session_ids"], "sharegpt_f1_0"]
    assert d.sessions[1].messages is d.sessions[3].messages
    assert d.probes[0].evidence == ("answer_0f05491a_1_1", "answer_0f05491a_2_1")


def test_memlab_run_refuses_a_question_without_a_haystack(
    tmp_path: Path, memlab_run_err: Callable[..., tuple[int, str]]
) -> None:
    """A question of no sessions replayed nothing: 0 calls, exit 0 (JSONL and LoCoMo refuse an empty dialogue)."""
    path = tmp_path / "empty.json"
    path.write_text(
        json.dumps(_one(haystack_session_ids=[], haystack_dates=[], haystack_sessions=[])), encoding="utf-8"
    )
    status, err = memlab_run_err("dataset=longmemeval", f"dataset.path={path}", f"output_dir={tmp_path / 'run'}")
    assert (status, err) == (
        2,
        f"memlab: error: {path}: [1].haystack_sessions: no turns; expected at least one non-empty session\n",
    )
    assert not (tmp_path / "run").exists()


def test_a_compressed_file_is_named_so(tmp_path: Path) -> None:
    """It said "expected a JSON list of LongMemEval questions"."""
    path = tmp_path / "longmemeval_s.json.gz"
    path.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    with pytest.raises(DatasetError) as e:
        list(load_longmemeval(path))
    assert str(e.value) == (
        f"{path}: the file is gzip-compressed (it begins with the bytes 1f 8b); expected JSON text: decompress it first"
    )


def test_a_file_that_begins_with_a_bom_reads_as_without(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    assert [d.id for d in load_longmemeval(path)] == [d.id for d in load_longmemeval(SAMPLE)]


@pytest.mark.parametrize(
    "text",
    [
        "when \udcff",  # a low half alone: ijson's C backend fails on it
        "ab\ud800",  # a high half alone: it read "ab?"
        "\ud800\u53f8",  # a high half before another escape: it read one character of another plane
        "\ud800\ud800\udc00",  # the first high half is alone, the second has its pair
    ],
)
def test_a_lone_surrogate_is_refused_naming_the_string(tmp_path: Path, text: str) -> None:
    """Legal JSON escape, no character: refused while reading, as the other loaders do, not read as other text."""
    path = tmp_path / "bad.json"
    turn = {"role": "user", "content": text}
    bad = {**RAW[1], "haystack_sessions": [RAW[1]["haystack_sessions"][0], [turn], RAW[1]["haystack_sessions"][2]]}
    path.write_text(json.dumps([RAW[0], bad, RAW[2]]), encoding="utf-8")
    with pytest.raises(DatasetError) as e:
        list(load_longmemeval(path))
    assert str(e.value) == f"{path}: [1].haystack_sessions[1][0].content: {HALF_PAIR}"


def test_surrogate_pairs_and_escaped_backslashes_read_as_written(tmp_path: Path) -> None:
    """An emoji escaped as a pair, and the text \\ud800 (an escaped backslash): no lone half, nothing refused."""
    path = tmp_path / "good.json"
    texts = ["I love \U0001f363 and \U0001f600", "\\ud800 is written so", "\\\U0001f600"]
    path.write_text(json.dumps([{**RAW[0], "question": text, "question_id": f"q{i}"} for i, text in enumerate(texts)]))
    assert [d.probes[0].question for d in load_longmemeval(path)] == texts


def test_a_missing_file_says_where_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no such file .*; get longmemeval_s\.json from https://huggingface\.co"):
        load_longmemeval(tmp_path / "longmemeval_s.json")  # at once, before anything is read
    with pytest.raises(DatasetError, match=r"dataset\.question_types: unknown type 'temporal'"):
        load_longmemeval(SAMPLE, question_types=["temporal"])
    with pytest.raises(DatasetError) as e:  # it kept every question: [] is none, as dataset.categories=[] is
        load_longmemeval(SAMPLE, question_types=[])
    assert str(e.value) == (
        f"dataset.question_types: [] keeps no question; expected some of {', '.join(QUESTION_TYPES)}, or null for all"
    )


def _turn2session(ranked_turns: list[str], correct: list[str], k: int) -> tuple[float, float]:
    """LongMemEval's evaluate_retrieval_turn2session (src/retrieval/eval_utils.py): recall_any, recall_all."""
    strip = ["_".join(t.split("_")[:-1]) for t in ranked_turns]
    effective_k = k
    while effective_k <= len(strip) and len(set(strip[:effective_k])) < k:
        effective_k += 1
    found = set(strip[:effective_k])
    return float(any(c in found for c in correct)), float(all(c in found for c in correct))


def test_a_run_scores_sessions_as_longmemeval_and_writes_its_questions_jsonl(tmp_path: Path) -> None:
    overrides = ["dataset=longmemeval", f"dataset.path={SAMPLE}", "longterm=chat", "eval.answers=true", "sim.workers=1"]
    result = memlab.run(overrides, tmp_path / "run")
    lines = (result.run_dir / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["question_id"] for line in lines] == [q["question_id"] for q in RAW]
    assert all(set(json.loads(line)) == {"question_id", "hypothesis"} for line in lines)

    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    scored = [r for r in result.records if isinstance(r, ProbeRecord) and "_abs" not in r.probe.id]
    assert metrics["longterm.questions"] == len(scored) == 5  # the abstention question is left out, as LongMemEval does
    for k in (1, 5, 10):
        any_all = []
        for record in scored:
            turns = list(dict.fromkeys(t for memory in record.results["longterm.retrieved_evidence"] for t in memory))
            any_all.append(_turn2session(turns, list(record.probe.metadata["evidence_sessions"]), k))
        assert metrics[f"longterm.session_recall_any@{k}"] == pytest.approx(sum(a for a, _ in any_all) / 5, abs=1e-6)
        assert metrics[f"longterm.session_recall_all@{k}"] == pytest.approx(sum(b for _, b in any_all) / 5, abs=1e-6)
    assert metrics["longterm.session_recall_all@1"] < metrics["longterm.session_recall_all@10"]
    assert metrics["longterm.questions.cat_knowledge-update"] == 1
