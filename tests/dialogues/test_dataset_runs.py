"""Every dataset entry runs end to end, and every kind of bad input stops `memlab run` with nothing written."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from in_process import memlab_main

from memlab.dialogues import Dialogue, load_jsonl
from memlab.dialogues.source import PROJECT_ROOT
from memlab.experiment import run_experiment


def _assistant_turns_locomo(path: Path) -> int:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return sum(
        t["speaker"] == s["conversation"]["speaker_b"]
        for s in raw
        for k, v in s["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
        for t in v
    )


def _assistant_turns_tau(path: Path) -> int:
    return sum(m["role"] == "assistant" for r in json.loads(path.read_text(encoding="utf-8")) for m in r["traj"])


def test_locomo_run(make_config, locomo_path: Path, tmp_path: Path) -> None:
    result = run_experiment(make_config("dataset=locomo", f"dataset.path={locomo_path}"), tmp_path / "run")
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["calls"] == _assistant_turns_locomo(locomo_path)
    assert result.metrics["tokens.prompt.max"] > result.metrics["tokens.prompt.mean"] > 0


def test_tau_bench_run(make_config, tau_bench_path: Path, tmp_path: Path) -> None:
    run_experiment(make_config("dataset=tau_bench", f"dataset.path={tau_bench_path}"), tmp_path / "run")
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["calls"] == _assistant_turns_tau(tau_bench_path)


def test_jsonl_run_with_the_default_relative_path(make_config, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # datasets/sample.jsonl is found under the project root
    run_experiment(make_config("dataset=jsonl"), tmp_path / "run")
    sample = (PROJECT_ROOT / "datasets" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    expected = sum(m["role"] == "assistant" for line in sample if line.strip() for m in json.loads(line)["messages"])
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["calls"] == expected


def test_synthetic_is_the_default_and_deterministic(make_config, tmp_path: Path) -> None:
    cfg = make_config()
    assert cfg.dataset._target_ == "memlab.dialogues.generate_synthetic" and cfg.dataset.seed == cfg.seed
    a, b = run_experiment(cfg, tmp_path / "a"), run_experiment(cfg, tmp_path / "b")
    assert (a.run_dir / "metrics.json").read_bytes() == (b.run_dir / "metrics.json").read_bytes()
    other = run_experiment(make_config("seed=1"), tmp_path / "c")
    assert (a.run_dir / "manifest.json").read_text() != (other.run_dir / "manifest.json").read_text()


def test_cli_runs_the_default_from_any_directory(run_cli, tmp_path: Path) -> None:
    done = run_cli(tmp_path, f"output_dir={tmp_path / 'run'}")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # Hydra's own run folder is not left behind
    assert {"metrics.json", "calls.csv", "config.yaml", "manifest.json"} <= {
        p.name for p in (tmp_path / "run").iterdir()
    }


def test_a_first_run_on_a_machine_does_not_print_matplotlib_building_its_font_cache(
    run_cli, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path_factory.mktemp("mpl")))  # no cache yet: as on a new machine
    done = run_cli(tmp_path, f"output_dir={tmp_path / 'run'}")  # the default run draws figures
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / "report.html").is_file() and "fontManager" not in done.stderr, done.stderr


GOOD_TURN = {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"}


def _locomo(conversation: dict) -> list[dict]:
    base = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1:56 pm on 8 May, 2023"}
    return [{"sample_id": "c", "conversation": {**base, **conversation}, "qa": []}]


BAD_INPUTS = {
    "missing file": ("jsonl", None, r"no such file \(looked in "),
    "truncated": (
        "locomo",
        '[{"sample_id": "c", "conversation": {',
        r"bad:1:\d+: the JSON ends early \(is the file truncated\?\)",
    ),
    "truncated in a string": (
        "locomo",
        '[{"sample_id": "c", "conversation": {"speaker_a": "An',
        r"bad:1:51: the JSON ends early, in the string that begins here \(is the file truncated\?\)",
    ),
    "gzip": ("locomo", gzip.compress(b"[]"), r"bad: the file is gzip-compressed \(it begins with the bytes 1f 8b\)"),
    "not json": ("tau_bench", "<html>oops</html>", r"bad:1:1: not valid JSON: Expecting value"),
    "missing field": (
        "locomo",
        _locomo({"session_1": [{"speaker": "Ann", "dia_id": "D1:1"}]}),
        r'bad: \[0\]\.conversation\.session_1\[0\]: missing key "text" \(expected a string\)',
    ),
    "wrong type": (
        "locomo",
        _locomo({"session_1": [{**GOOD_TURN, "text": 7}]}),
        r"bad: \[0\]\.conversation\.session_1\[0\]\.text: expected a string, got an integer",
    ),
    "empty locomo corpus": ("locomo", "[]", r"bad: no samples \(the file is \[\]\); expected a list of LoCoMo"),
    "empty tau-bench corpus": ("tau_bench", "[]", r"bad: no trajectories \(the file is \[\]\)"),
    "empty dialogue": ("jsonl", '{"messages": []}\n', r"bad:1: messages: no messages besides a system prompt"),
    "non-UTF-8 byte": (
        "jsonl",
        b'{"messages": [{"role": "user", "content": "\xff"}]}\n',
        r"bad:1:\d+: byte 0xff is not UTF-8",
    ),
    "bad date": (
        "locomo",
        _locomo({"session_1": [GOOD_TURN], "session_1_date_time": "soon"}),
        r"session_1_date_time: cannot read the date 'soon'",
    ),
    # JSON Python reads but cannot use: a lone surrogate (legal as an escape, no character, fails at publish).
    "lone surrogate": (
        "locomo",
        _locomo({"session_1": [{**GOOD_TURN, "text": "hi \udcff"}]}),
        r"\[0\]\.conversation\.session_1\[0\]\.text: holds an escape of half a surrogate pair",
    ),
    # JSON Python refuses to read: too deep for its recursion, an integer of more than 4,300 digits.
    "nested too deeply": ("tau_bench", "[" * 100_000 + "]" * 100_000, r"bad:1: the JSON is nested too deeply"),
    "huge integer": ("locomo", '[{"sample_id": ' + "9" * 5000 + "}]", r"bad:1: cannot read the JSON: Exceeds"),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_message_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], case: str
) -> None:
    """In this process (`memlab run` as the console script calls it): a process per case added ~1 s each, and
    test_cli_runs_the_default_from_any_directory keeps one true process run."""
    dataset, content, message = BAD_INPUTS[case]
    data = tmp_path / "data"
    data.mkdir()
    bad = data / "bad"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    elif isinstance(content, str):
        bad.write_text(content, encoding="utf-8")
    elif content is not None:
        bad.write_text(json.dumps(content), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)  # as a user runs it
    status = memlab_main("run", f"dataset={dataset}", f"dataset.path={bad}", f"output_dir={work / 'run'}")
    out, err = capfd.readouterr()
    assert status == 2, err
    [line] = err.strip().splitlines()  # one message, no traceback
    assert line.startswith(f"memlab: error: {bad}")
    assert re.search(message, line), line
    assert list(work.iterdir()) == []  # no run folder, no metrics.json, nothing half-written
    assert out == ""


@pytest.mark.parametrize("sample_id", ["", "x" * 300])
def test_a_dialogue_id_no_store_can_keep_exits_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], sample_id: str
) -> None:
    """An id is a session's key in the histories' store (at most 255 characters on every backend): found where the
    store is first given it, mid-run, and told in one line, not a ValueError traceback."""
    data = tmp_path / "c.json"
    data.write_text(json.dumps([{**_locomo({"session_1": [GOOD_TURN]})[0], "sample_id": sample_id}]))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status = memlab_main("run", "dataset=locomo", f"dataset.path={data}", "sim.workers=1")
    err = capfd.readouterr().err
    [line] = err.strip().splitlines()
    assert status == 2 and line.startswith("memlab: error: a key or session id is a non-empty string of at most 255")
    assert list(work.iterdir()) == []


def test_a_user_id_too_long_for_a_run_scoped_store_exits_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Long-term memory checks the namespace's 255 characters; on a shared store the run's scope adds its prefix,
    and the store's own check was a ValueError traceback mid-run."""
    line = {"id": "d1", "user_id": "u" * 215, "messages": [{"role": "user", "content": "I work as a nurse."}]}
    data = tmp_path / "c.jsonl"
    data.write_text(json.dumps(line) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = ("dataset=jsonl", f"dataset.path={data}", "longterm=chat", "store=sqlite", f"store.path={tmp_path / 'db'}")
    status = memlab_main("run", *args)
    err = capfd.readouterr().err
    scope, said = err.strip().splitlines()  # the scope, named before the run wrote a row, then the error
    assert scope.startswith("memlab: run default: writes to the store under scope run:"), scope
    assert status == 2 and said.startswith('memlab: error: namespace ["run:'), said
    assert "characters stored; at most 255 (a user or agent id too long for a store" in said
    assert list(work.iterdir()) == []


def test_two_dialogues_with_one_id_exit_2_before_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each dialogue's id names its history in the store: two users' histories were mixed (with two workers,
    written at once) and the metrics changed from run to run."""
    lines = [{"id": "same", "user_id": user, "messages": [{"role": "user", "content": "hi"}]} for user in ("a", "b")]
    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.chdir(tmp_path)
    unique = "dialogue ids are unique: each names its own history in the store"
    status = memlab_main("run", "dataset=jsonl", f"dataset.path={data}", "output_dir=run")
    err = capfd.readouterr().err
    assert status == 2 and err == f"memlab: error: {data}:2: id: 'same' is also the id of line 1; {unique}\n"
    # a dataset of the user's own, which cannot name a place in a file: the run's own check
    status = memlab_main("run", "dataset=jsonl", f"dataset._target_={__name__}.twice", "output_dir=run")
    err = capfd.readouterr().err
    assert status == 2 and err == (
        f"memlab: error: the dataset ({__name__}.twice) gives the dialogue id 'line-1' twice (at positions 1 and 3 of "
        f"the dialogues it gives, from 1); {unique}\n"
    )
    assert not (tmp_path / "run").exists()


def twice(path: str, max_dialogues: int | None = None) -> list[Dialogue]:
    """The shipped JSONL sample's dialogues, then its first again: a custom loader that repeats an id."""
    dialogues = load_jsonl(path, max_dialogues)
    return [*dialogues, dialogues[0]]


def test_evidence_ids_the_loader_dropped_are_told_in_one_warning_and_counted_in_the_manifest(
    tmp_path: Path, memlab_run_err, write_json, locomo_sample
) -> None:
    """They were counted in Dialogue.metadata only: a question that lost all its evidence left the recall and
    retention means, and nothing in the run said so."""
    sample = locomo_sample()
    qa = sample["qa"][0]
    sample["qa"] = [
        {**qa, "evidence": ["D1:300"]},
        {**qa, "evidence": ["D1:2", "D:1"]},
        {**qa, "evidence": ["D1: 2"]},  # read as D1:2
        {**qa, "evidence": ["D1:20", "D1:9"]},
    ]
    data = write_json(tmp_path / "l.json", [sample])
    status, err = memlab_run_err("dataset=locomo", f"dataset.path={data}", "report.plots=false", "output_dir=run")
    warning = (
        "the dataset's evidence lists hold 4 ids that name no turn, dropped from 3 questions (2 left with no "
        "evidence, which recall and retention leave out): [0].qa[0].evidence[0] 'D1:300', [0].qa[1].evidence[1] "
        "'D:1', [0].qa[3].evidence[0] 'D1:20', ... (docs/datasets.md, Untidiness handled and counted)"
    )
    assert status == 0 and f"memlab: WARNING: {warning}\n" in err
    assert f"WARNING memlab.progress: {warning}\n" in (tmp_path / "run" / "run.log").read_text()
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["evidence_dropped"] == 4


def test_a_selection_that_keeps_no_dialogue_exits_2_and_writes_nothing(
    locomo_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    status = memlab_main("run", "dataset=locomo", f"dataset.path={locomo_path}", "dataset.sample_ids=[]")
    err = capfd.readouterr().err
    assert status == 2 and err.strip() == (
        "memlab: error: the dataset (memlab.dialogues.load_locomo) gives no dialogue to replay with these settings"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("dataset", "target", "key"),
    [
        ("synthetic", "generate_synthetic", "dialogues"),
        ("locomo", "load_locomo", "max_dialogues"),
        ("tau_bench", "load_tau_bench", "max_dialogues"),
    ],
)
def test_sim_max_dialogues_reads_only_those_dialogues(
    make_config, locomo_path: Path, tau_bench_path: Path, monkeypatch: pytest.MonkeyPatch, dataset, target, key
) -> None:
    """The loader is told `sim.max_dialogues` (a tiny run reads or generates one dialogue), and the dialogues are
    the first of a full read, cut to `sim.max_sessions` as before; a smaller cap of the entry's own still wins."""
    import memlab.dialogues
    from memlab.experiment import load_dialogues

    path = {"locomo": [f"dataset.path={locomo_path}"], "tau_bench": [f"dataset.path={tau_bench_path}"]}
    base = [f"dataset={dataset}", *path.get(dataset, [])]
    full = load_dialogues(make_config(*base))
    asked: list[object] = []
    load = getattr(memlab.dialogues, target)

    def spied(*args: object, **kwargs: object) -> object:
        asked.append(kwargs.get(key))
        return load(*args, **kwargs)

    monkeypatch.setattr(memlab.dialogues, target, spied)
    assert load_dialogues(make_config(*base, "sim.max_dialogues=2", "sim.max_sessions=1")) == [
        d.head(1) for d in full[:2]
    ]
    assert load_dialogues(make_config(*base, "sim.max_dialogues=2", f"dataset.{key}=1")) == full[:1]
    assert asked == [2, 1]
