"""The LoCoMo loader on the real dev corpus and on hand-made files for each untidy or broken case."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import pytest

from memlab.dialogues import Observation, Probe, load_locomo
from memlab.dialogues.locomo import LOCOMO_CATEGORIES, TURN_INTERVAL, parse_session_time
from memlab.dialogues.model import DECOYS_KEY, DROPPED_EVIDENCE_KEY, SUPERSEDED_KEY
from memlab.errors import DatasetError

DIA_ID = re.compile(r"D\d+:\d+")
TURN = {"speaker": "Ann", "dia_id": "D1:3", "text": "Bye!"}


@pytest.fixture(scope="module")
def raw(locomo_path: Path) -> list[dict]:
    return json.loads(locomo_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def dialogues(locomo_path: Path):
    return load_locomo(locomo_path)


def test_counts_match_the_raw_file(locomo_path: Path, dialogues) -> None:
    text = locomo_path.read_text(encoding="utf-8")
    assert len(dialogues) == text.count('"sample_id"') == 7
    assert sum(len(d) for d in dialogues) == text.count('"dia_id"') == 4124
    assert sum(len(d.sessions) for d in dialogues) == len(re.findall(r'"session_\d+": \[', text)) == 187
    assert sum(len(d.probes) for d in dialogues) == text.count('"question"') == 1347
    assert sum(d.metadata["images"] for d in dialogues) == text.count('"blip_caption"')
    assert sum(m.text.count("[shares an image: ") for d in dialogues for m in d.messages()) == text.count(
        '"blip_caption"'
    )


def test_sessions_in_numeric_order_with_times_and_roles(raw, dialogues) -> None:
    for sample, d in zip(raw, dialogues, strict=True):
        conv = sample["conversation"]
        numbers = [int(s.id.split("_")[1]) for s in d.sessions]
        assert numbers == sorted(numbers) and len(numbers) >= 19  # session_10 after session_9, not after session_1
        for s in d.sessions:
            start = s.started_at
            assert start is not None and start.year in (2022, 2023, 2024)
            assert [m.timestamp for m in s.messages] == [start + i * TURN_INTERVAL for i in range(len(s.messages))]
            assert [m.id for m in s.messages] == [t["dia_id"] for t in conv[s.id]]
            for m, t in zip(s.messages, conv[s.id], strict=True):
                assert m.speaker == m.name == t["speaker"]
                assert m.role == ("user" if t["speaker"] == conv["speaker_a"] else "assistant")
                assert m.text.startswith(t["text"])
    first = dialogues[0].sessions[0]
    assert first.started_at == datetime(2023, 5, 8, 13, 56)
    assert first.messages[1].timestamp == datetime(2023, 5, 8, 13, 56, 30)


def test_untidy_evidence_is_split_or_dropped_and_counted(raw, dialogues) -> None:
    by_id = {d.id: d for d in dialogues}
    # Found by reading the dev file: one entry holds two ids, four name no turn of their conversation.
    assert by_id["conv-26"].metadata["evidence_split"] == 1
    assert {k: d.metadata["evidence_dropped_values"] for k, d in by_id.items() if d.metadata["evidence_dropped"]} == {
        "conv-42": ("D10:19", "D"),
        "conv-43": ("D:11:26",),
        "conv-47": ("D4:36",),
    }
    painted = next(p for p in by_id["conv-26"].probes if p.question == "What did Melanie paint recently?")
    assert painted.evidence == ("D8:6", "D9:17")
    # Every well-formed id of the raw evidence lists is kept exactly when its turn exists.
    for sample, d in zip(raw, dialogues, strict=True):
        ids = d.message_ids()
        for qa, probe in zip(sample["qa"], d.probes, strict=True):
            written = [t for e in qa["evidence"] for t in DIA_ID.findall(e)]
            assert list(probe.evidence) == [t for t in dict.fromkeys(written) if t in ids]
            assert set(probe.evidence) <= ids
    assert sum(d.metadata["evidence_dropped"] for d in dialogues) == 4


def test_probes_answers_and_categories(raw, dialogues) -> None:
    for sample, d in zip(raw, dialogues, strict=True):
        for i, (qa, probe) in enumerate(zip(sample["qa"], d.probes, strict=True)):
            assert probe.id == f"{d.id}:q{i}"
            assert probe.category == LOCOMO_CATEGORIES[str(qa["category"])]
            assert probe.metadata["locomo_category"] == str(qa["category"])
            assert probe.answer == (str(qa["answer"]) if "answer" in qa else None)  # never the adversarial trap
            assert probe.metadata.get("adversarial_answer") == qa.get("adversarial_answer")
    adversarial = [p for d in dialogues for p in d.probes if p.category == "adversarial"]
    assert len(adversarial) == 312 and sum(p.answer is None for p in adversarial) == 310


def test_category_names_fit_the_questions(dialogues) -> None:
    """LoCoMo's numbering, checked on the data: multi-hop cites several turns, temporal asks when."""
    probes = [p for d in dialogues for p in d.probes]

    def share(category: str, test: Callable[[Probe], bool]) -> float:
        chosen = [p for p in probes if p.category == category]
        return sum(map(test, chosen)) / len(chosen)

    assert share("multi-hop", lambda p: len(p.evidence) > 1) > 0.9
    assert share("single-hop", lambda p: len(p.evidence) == 1) > 0.9
    assert share("temporal", lambda p: p.question.lower().startswith("when")) > 0.7
    guess = ("would", "likely", "might", "probably")  # open-domain asks for inference, nothing else does
    speculative = lambda p: any(w in f"{p.question} {p.answer}".lower().split() for w in guess)  # noqa: E731
    assert share("open-domain", speculative) > 0.5
    assert all(share(c, speculative) == 0 for c in ("multi-hop", "temporal", "single-hop"))


def test_annotations_are_typed_metadata(raw, dialogues) -> None:
    for sample, d in zip(raw, dialogues, strict=True):
        meta = d.metadata
        assert meta["speaker_a"] == sample["conversation"]["speaker_a"]
        assert list(meta["session_summaries"]) == [s.id for s in d.sessions]
        assert meta["session_summaries"]["session_1"] == sample["session_summary"]["session_1_summary"]
        written = sum(len(f) for v in sample["observation"].values() for f in v.values())
        assert len(meta["observations"]) == written
        assert all(isinstance(o, Observation) and set(o.evidence) <= d.message_ids() for o in meta["observations"])
        events = sum(len(v) for e in sample["event_summary"].values() for k, v in e.items() if k != "date")
        assert len(meta["events"]) == events
    conv44 = next(d for d in dialogues if d.id == "conv-44")
    assert conv44.metadata["observation_evidence_split"] == 1  # "D26:14, D26:34, D26:42"
    assert any(o.evidence == ("D26:14", "D26:34", "D26:42") for o in conv44.metadata["observations"])


def test_options_select_dialogues_and_probes(locomo_path: Path) -> None:
    assert [d.id for d in load_locomo(locomo_path, max_dialogues=2)] == ["conv-26", "conv-30"]
    assert [d.id for d in load_locomo(locomo_path, sample_ids=["conv-47", "conv-26"])] == ["conv-47", "conv-26"]
    [d] = load_locomo(locomo_path, sample_ids=["conv-26"], categories=[2, "4"])
    assert d.probes and {p.category for p in d.probes} == {"temporal", "single-hop"}
    [by_name] = load_locomo(locomo_path, sample_ids=["conv-26"], categories=["temporal", "single-hop"])
    assert by_name.probes == d.probes
    with pytest.raises(DatasetError, match=r"no sample_id 'conv-99'; the file has conv-26, conv-30"):
        load_locomo(locomo_path, sample_ids=["conv-99"])


KNOWN = "1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial"


@pytest.mark.parametrize(
    ("categories", "message"),
    [
        (["single-hop", "multihop"], f"unknown category 'multihop'; expected LoCoMo's names or numbers ({KNOWN})"),
        ([5, "bogus"], f"unknown category 'bogus'; expected LoCoMo's names or numbers ({KNOWN})"),
        ([6], f"unknown category 6; expected LoCoMo's names or numbers ({KNOWN})"),
        ([], f"[] keeps no question; expected LoCoMo's names or numbers ({KNOWN}), or null for all"),
    ],
)
def test_a_category_that_is_none_of_locomo_s_is_refused(locomo_path: Path, categories: list, message: str) -> None:
    """A typo beside a good name dropped the questions it meant, without a word (only a selection that kept
    nothing was refused); refused as dataset.question_types refuses an unknown type."""
    with pytest.raises(DatasetError) as e:
        load_locomo(locomo_path, categories=categories)
    assert str(e.value) == f"dataset.categories: {message}"


def test_a_category_number_of_the_file_s_own_is_kept(tmp_path: Path, write_json, locomo_sample) -> None:
    sample = locomo_sample()
    sample["qa"].append({"question": "Own kind?", "answer": "yes", "evidence": ["D1:1"], "category": 7})
    path = write_json(tmp_path / "own.json", [sample])
    [d] = load_locomo(path, categories=["7"])
    assert [p.question for p in d.probes] == ["Own kind?"]
    with pytest.raises(DatasetError, match=rf"unknown category 8; expected .*\({KNOWN}\), or this file's 7$"):
        load_locomo(path, categories=[8])
    # a known category that no question of the selection has would run without asking any: refused
    with pytest.raises(DatasetError, match=r"own\.json: no question is of dataset\.categories \[5\] \(LoCoMo's: 1 mu"):
        load_locomo(path, categories=[5])


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("12:06 am on 11 November, 2022", datetime(2022, 11, 11, 0, 6)),
        ("10:04 AM on 19 Dec, 2023", datetime(2023, 12, 19, 10, 4)),
        ("9:15 pm on March 3, 2024", datetime(2024, 3, 3, 21, 15)),
        ("8 May 2023", datetime(2023, 5, 8)),
        ("2023-05-08T13:56:00", datetime(2023, 5, 8, 13, 56)),
        ("sometime in May", None),
    ],
)
def test_session_times(written: str, expected: datetime | None) -> None:
    assert parse_session_time(written) == expected


def test_sessions_sort_numerically_and_may_skip(tmp_path: Path, write_json, locomo_sample) -> None:
    turn = {"speaker": "Ann", "text": "again"}
    sample = locomo_sample(
        session_10=[{**turn, "dia_id": "D10:1"}],
        session_10_date_time="9:00 am on 20 May, 2023",
        session_2=[{**turn, "dia_id": "D2:1"}],
        session_2_date_time="9:00 am on 10 May, 2023",
        session_11_date_time="9:00 am on 30 May, 2023",  # a date without a session is ignored
    )
    [d] = load_locomo(write_json(tmp_path / "l.json", [sample]))
    assert [s.id for s in d.sessions] == ["session_1", "session_2", "session_10"]
    assert d.sessions[2].started_at == datetime(2023, 5, 20, 9, 0)
    assert d.sessions[0].messages[1].text == "Hi Ann, look at this. [shares an image: a red kite]"
    assert d.sessions[0].messages[1].role == "assistant" and d.user_id == "conv-1"


def test_a_session_key_is_read_as_written(tmp_path: Path, write_json, locomo_sample) -> None:
    """``session_01`` is session 1, its date at ``session_01_date_time`` (its number once named a missing session_1)."""
    sample = locomo_sample()
    conversation = sample["conversation"]
    conversation["session_01"] = conversation.pop("session_1")
    conversation["session_01_date_time"] = "9:00 am on 10 May, 2023"
    del conversation["session_1_date_time"]
    [d] = load_locomo(write_json(tmp_path / "l.json", [sample]))
    assert [(s.id, s.started_at, len(s.messages)) for s in d.sessions] == [("session_01", datetime(2023, 5, 10, 9), 2)]


def test_two_keys_of_one_session_number_are_named(tmp_path: Path, write_json, locomo_sample) -> None:
    """``session_1`` beside ``session_01`` replayed session_1 twice."""
    turns = [{"speaker": "Ann", "dia_id": "D9:1", "text": "again"}]
    sample = locomo_sample(session_01=turns, session_01_date_time="9:00 am on 10 May, 2023")
    path = write_json(tmp_path / "l.json", [sample])
    with pytest.raises(DatasetError) as e:
        load_locomo(path)
    assert str(e.value) == (
        f"{path}: [0].conversation.session_01: names session 1, as session_1 does; expected one key per session"
    )


def test_one_name_for_both_speakers_is_named(tmp_path: Path, write_json, locomo_sample) -> None:
    """speaker_a plays the user and speaker_b the assistant: with one name, every turn became an assistant turn."""
    sample = locomo_sample(speaker_b="Ann")
    for turn in sample["conversation"]["session_1"]:
        turn["speaker"] = "Ann"
    path = write_json(tmp_path / "l.json", [sample])
    with pytest.raises(DatasetError) as e:
        load_locomo(path)
    assert str(e.value) == (
        f"{path}: [0].conversation.speaker_b: 'Ann' is also speaker_a; expected two people (speaker_a plays the "
        "user, speaker_b the assistant)"
    )


@pytest.mark.parametrize(
    ("session", "first"),
    [("session_1", "[0].conversation.session_1[0]"), ("session_2", "[0].conversation.session_1[1]")],
)
def test_a_dia_id_given_twice_in_a_conversation_is_named(
    tmp_path: Path, write_json, locomo_sample, session: str, first: str
) -> None:
    """Evidence names turns by dia_id: with two turns of one id, recall would credit either (JSONL refuses it too)."""
    sample = locomo_sample(session_2=[], session_2_date_time="9:00 am on 10 May, 2023")
    again = {"speaker": "Ann", "dia_id": "D1:1" if session == "session_1" else "D1:2", "text": "again"}
    sample["conversation"][session].append(again)
    path = write_json(tmp_path / "l.json", [sample])
    at = f"[0].conversation.{session}[{len(sample['conversation'][session]) - 1}].dia_id"
    with pytest.raises(DatasetError) as e:
        load_locomo(path)
    assert str(e.value) == (
        f"{path}: {at}: {again['dia_id']!r} is also the dia_id of {first}; a conversation's dia_ids are unique "
        "(evidence names turns by dia_id)"
    )


def test_a_sample_id_given_twice_is_named(tmp_path: Path, write_json, locomo_sample) -> None:
    path = write_json(tmp_path / "twice.json", [locomo_sample("s1"), locomo_sample("s2"), locomo_sample("s1")])
    with pytest.raises(DatasetError) as e:
        load_locomo(path, sample_ids=["s2"])  # the whole file's: which s1 would sample_ids=[s1] pick?
    assert str(e.value) == (
        f"{path}: [2].sample_id: 's1' is also the sample_id of [0]; dialogue ids are unique: each names its own "
        "history in the store (and dataset.sample_ids picks samples by it)"
    )


def test_malformed_evidence_never_fails(tmp_path: Path, write_json, locomo_sample) -> None:
    sample = locomo_sample()
    sample["qa"][0]["evidence"] = ["D1:2, D1:1", "D", "D1:9", 7, "D1:2", "D:1:1"]
    sample["qa"].append({**sample["qa"][0], "evidence": ["D1: 1", "D1: 2 9"]})  # a space after the colon
    [d] = load_locomo(write_json(tmp_path / "l.json", [sample]))
    assert d.probes[0].evidence == ("D1:2", "D1:1")
    assert d.probes[1].evidence == ("D1:1", "D1:2")  # read as D1:1 and D1:2: the pieces name no turn
    assert d.metadata["evidence_split"] == 2  # "D1:2, D1:1", and "D1: 2 9" (D1:2 and 9)
    assert d.metadata["evidence_dropped"] == 5
    assert d.metadata["evidence_dropped_values"] == ("D", "D1:9", "7", "D:1:1", "9")
    # each probe names what it lost and where, for the run's warning (memlab.dialogues.model.dropped_evidence)
    assert d.probes[0].metadata[DROPPED_EVIDENCE_KEY] == (
        ("[0].qa[0].evidence[1]", "D"),
        ("[0].qa[0].evidence[2]", "D1:9"),
        ("[0].qa[0].evidence[3]", "7"),
        ("[0].qa[0].evidence[5]", "D:1:1"),
    )
    assert d.probes[1].metadata[DROPPED_EVIDENCE_KEY] == (("[0].qa[1].evidence[1]", "9"),)


def test_a_space_after_the_colon_is_read_only_when_that_names_one_turn(
    tmp_path: Path, write_json, locomo_sample
) -> None:
    """ "D1: 2" is D1:2; where the piece before the space names a turn itself, the two are two ids."""
    sample = locomo_sample(session_1=[*locomo_sample()["conversation"]["session_1"], {**TURN, "dia_id": "D1:"}])
    sample["qa"][0]["evidence"] = ["D1: 2"]
    [d] = load_locomo(write_json(tmp_path / "l.json", [sample]))
    assert d.probes[0].evidence == ("D1:",)
    assert d.probes[0].metadata[DROPPED_EVIDENCE_KEY] == (("[0].qa[0].evidence[0]", "2"),)


def test_a_zero_padded_number_reads_as_the_turn_when_that_is_the_only_reading(
    tmp_path: Path, write_json, locomo_sample
) -> None:
    """ "D1:02" was dropped, with the run's warning, in a conversation whose turn is D1:2; where two turns read the same
    without their zeros (D1:2 and D1:02), an id that is neither is dropped, and each of them is read as written."""
    sample = locomo_sample()
    sample["qa"][0]["evidence"] = ["D1:02", "D01:001", "D1: 02"]
    [d] = load_locomo(write_json(tmp_path / "l.json", [sample]))
    assert d.probes[0].evidence == ("D1:2", "D1:1")
    assert DROPPED_EVIDENCE_KEY not in d.probes[0].metadata and d.metadata["evidence_dropped"] == 0
    both = locomo_sample(session_1=[*locomo_sample()["conversation"]["session_1"], {**TURN, "dia_id": "D1:02"}])
    both["qa"][0]["evidence"] = ["D1:002", "D1:02", "D1:2", "D1:0" + "0" * 5000 + "1"]
    [d] = load_locomo(write_json(tmp_path / "both.json", [both]))
    assert d.probes[0].evidence == ("D1:02", "D1:2", "D1:1")
    assert d.probes[0].metadata[DROPPED_EVIDENCE_KEY] == (("[0].qa[0].evidence[0]", "D1:002"),)


def test_superseded_and_decoy_turns_are_kept_in_probe_metadata(tmp_path: Path, write_json, locomo_sample) -> None:
    """memlab's own QA keys (datasets/updates/) are kept as tuples; a question without them has none."""
    sample = locomo_sample()
    sample["qa"] += [
        {"question": "Who greets?", "answer": "Bob", "evidence": ["D1:2"], "superseded": ["D1:1"], "category": 4},
        {"question": "Who greets first?", "answer": "Ann", "evidence": ["D1:1"], "decoys": ["D1:2"], "category": 4},
    ]
    [d] = load_locomo(write_json(tmp_path / "l.json", [sample]))
    plain, updated, decoyed = d.probes
    assert SUPERSEDED_KEY not in plain.metadata and DECOYS_KEY not in plain.metadata
    assert updated.metadata[SUPERSEDED_KEY] == ("D1:1",) and DECOYS_KEY not in updated.metadata
    assert decoyed.metadata[DECOYS_KEY] == ("D1:2",) and SUPERSEDED_KEY not in decoyed.metadata


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("sample_id"), r'\[0\]: missing key "sample_id" \(expected a string\)'),
        (lambda s: s["conversation"].pop("speaker_b"), r'\[0\]\.conversation: missing key "speaker_b"'),
        (
            lambda s: s["conversation"]["session_1"][1].pop("text"),
            r'\[0\]\.conversation\.session_1\[1\]: missing key "text"',
        ),
        (
            lambda s: s["conversation"]["session_1"][0].update(text=None),
            r"\[0\]\.conversation\.session_1\[0\]\.text: expected a string, got null",
        ),
        (
            lambda s: s["conversation"].update(session_1={}),
            r"\[0\]\.conversation\.session_1: expected a list, got an object",
        ),
        (
            lambda s: s["conversation"].update(session_1_date_time="the day after"),
            r"\[0\]\.conversation\.session_1_date_time: cannot read the date 'the day after'; expected e\.g\.",
        ),
        (
            lambda s: s["conversation"].update(session_1_date_time="9999-12-31T23:00:00-05:00"),
            r"\.session_1_date_time: '9999-12-31T23:00:00-05:00' is out of range once converted to UTC$",
        ),
        (
            lambda s: s["conversation"].update(session_1_date_time="11:59 pm on 31 December, 9999"),
            r"\.session_1_date_time: '11:59 pm on 31 December, 9999' is too late: the replay's clock runs on",
        ),
        (lambda s: s["conversation"].pop("session_1_date_time"), r'missing key "session_1_date_time"'),
        (
            lambda s: s["conversation"]["session_1"][0].update(speaker="Cy"),
            r"session_1\[0\]\.speaker: 'Cy' is neither speaker_a nor speaker_b \(Ann, Bob\)",
        ),
        (lambda s: s["conversation"].update(session_1=[]), r"\[0\]\.conversation: no turns; expected at least one"),
        (lambda s: s["qa"][0].update(category="four"), r"\[0\]\.qa\[0\]\.category: expected an integer, got a string"),
        (lambda s: s["qa"][0].pop("evidence"), r'\[0\]\.qa\[0\]: missing key "evidence" \(expected a list\)'),
        (lambda s: s.update(observation=[]), r"\[0\]\.observation: expected an object, got a list"),
        (
            lambda s: s["qa"][0].update(superseded=["D1:1", "D9:9"]),
            r"\[0\]\.qa\[0\]\.superseded\[1\]: 'D9:9' is not a dia_id of this conversation; expected e\.g\. 'D1:3'",
        ),
        (lambda s: s["qa"][0].update(decoys="D1:1"), r"\[0\]\.qa\[0\]\.decoys: expected a list, got a string"),
    ],
)
def test_broken_sample_names_the_place(tmp_path: Path, write_json, locomo_sample, change, message) -> None:
    sample = locomo_sample()
    change(sample)
    path = write_json(tmp_path / "bad.json", [sample])
    with pytest.raises(DatasetError, match=message) as e:
        load_locomo(path)
    assert str(e.value).startswith(f"{path}: ")


def test_top_level_must_be_a_list(tmp_path: Path, write_json, locomo_sample) -> None:
    with pytest.raises(DatasetError, match=r"bad\.json: expected a list, got an object$"):
        load_locomo(write_json(tmp_path / "bad.json", locomo_sample()))


def test_missing_file_says_where_it_looked_and_where_to_get_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatasetError) as e:
        load_locomo("datasets/locomo10.json")
    assert f"looked in {tmp_path / 'datasets/locomo10.json'}, " in str(e.value)
    assert "https://github.com/snap-research/locomo" in str(e.value)
