"""`memlab.compose` and `memlab.run`: the library gives what `memlab run` gives, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import memlab
from memlab.config_keys import ConfigKeyProblem
from memlab.errors import MemlabError

OVERRIDES = ["context=sliding_window", "context.max_tokens=1500", "debug=default"]


def test_compose_validates_and_applies_overrides() -> None:
    cfg = memlab.compose(OVERRIDES)
    assert cfg.context.strategy.max_tokens == 1500 and cfg.sim.max_dialogues == 1
    with pytest.raises(ConfigKeyProblem, match="foo: no such key"):
        memlab.compose(["+foo=1"])


@pytest.mark.parametrize(
    ("overrides", "said"),
    [
        ("context=trim", "overrides: expected a list of strings such as ['context=trim'], got 'context=trim'"),
        (None, "overrides: expected a list of strings such as ['context=trim'], got None"),
        ([1], "overrides: expected strings such as 'context=trim', got 1"),
        (["context"], "Error parsing override 'context' missing EQUAL at '<EOF>'"),
        (["context=sliding_window", "context.max_tokens=-1"], "context.max_tokens=-1 is out of range; valid: > 0"),
        (["hydra.run.dir=x"], "hydra.run.dir=x: memlab.run puts a run in its run_dir argument"),
    ],
)
def test_compose_refuses_in_one_line_what_the_command_line_would(overrides: object, said: str) -> None:
    with pytest.raises(MemlabError) as raised:
        memlab.compose(overrides)  # type: ignore[arg-type]
    assert str(raised.value).startswith(said) and "\n" not in str(raised.value), raised.value


def test_the_api_is_listed_before_its_first_use() -> None:
    """A notebook's completion reads `dir(memlab)`: `compose` and `run` load on first use, and are offered before."""
    assert {"compose", "run", "RunResult", "__version__"} <= set(dir(memlab))


def test_compose_inside_another_hydra_application_leaves_its_hydra(tmp_path: Path) -> None:
    import hydra

    (tmp_path / "app.yaml").write_text("x: 1\n")
    with hydra.initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        assert memlab.compose(OVERRIDES).context.strategy.max_tokens == 1500
        assert hydra.compose(config_name="app").x == 1  # the application's Hydra, as it was


def test_run_leaves_the_callers_random_state_and_explains_a_config_it_cannot_resolve(tmp_path: Path) -> None:
    import random

    import numpy as np

    random.seed(7)
    np.random.seed(7)
    expected = random.random(), np.random.rand()
    random.seed(7)
    np.random.seed(7)
    memlab.run(OVERRIDES, tmp_path / "run")
    assert (random.random(), np.random.rand()) == expected  # not the run's seed 0 draws
    cfg = memlab.compose(OVERRIDES)
    cfg.name = "${oc.env:MEMLAB_NO_SUCH_VARIABLE}"
    with pytest.raises(MemlabError, match="Environment variable 'MEMLAB_NO_SUCH_VARIABLE' not found"):
        memlab.run(cfg, tmp_path / "unresolved")
    assert not (tmp_path / "unresolved").exists()


def test_run_matches_the_command_line(tmp_path: Path) -> None:
    result = memlab.run(OVERRIDES, tmp_path / "api")
    assert isinstance(result, memlab.RunResult) and result.metrics["calls"] > 0
    assert not (result.run_dir / "questions.jsonl").exists()  # no answers generated, no hypotheses file
    cli = tmp_path / "cli"
    done = subprocess.run(
        [sys.executable, "-m", "memlab", "run", *OVERRIDES, f"output_dir={cli}"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (result.run_dir / "metrics.json").read_bytes() == (cli / "metrics.json").read_bytes()
    # a composed config runs as well, and where memlab run would put it
    again = memlab.run(memlab.compose(OVERRIDES), tmp_path / "cfg")
    assert (again.run_dir / "metrics.json").read_bytes() == (cli / "metrics.json").read_bytes()


def test_generated_answers_go_to_questions_jsonl_in_longmemeval_shape(tmp_path: Path) -> None:
    """One ``{"question_id", "hypothesis"}`` line per probe, as LongMemEval's evaluate_qa.py reads them."""
    import json

    import pandas as pd

    run = memlab.run([*OVERRIDES, "eval.answers=true", "eval.judge=false"], tmp_path / "qa").run_dir
    lines = [json.loads(line) for line in (run / "questions.jsonl").read_text().splitlines()]
    table = pd.read_csv(run / "questions.csv", keep_default_na=False)
    assert lines and all(set(line) == {"question_id", "hypothesis"} for line in lines)
    assert [line["question_id"] for line in lines] == [str(p) for p in table["probe"]]
    assert [line["hypothesis"] for line in lines] == [str(g) for g in table["generated"]]
    assert any(line["hypothesis"] for line in lines)


def test_a_rebuilt_run_writes_an_empty_answer_as_an_empty_hypothesis(tmp_path: Path) -> None:
    """`memlab report` reads questions.csv back with pandas, where an empty answer is NaN: it was written as NaN."""
    import json

    from memlab.report import load_run
    from memlab.report.rundata import run_files

    run = memlab.run([*OVERRIDES, "eval.answers=true", "eval.judge=false"], tmp_path / "qa").run_dir
    written = (run / "questions.jsonl").read_text()
    assert '"hypothesis": ""' in written  # the extractive model answers some probe with nothing

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    rebuilt = run_files(load_run(run))["questions.jsonl"]
    assert [json.loads(line, parse_constant=refuse) for line in rebuilt.splitlines()]
    assert rebuilt == written


def test_a_rebuilt_run_keeps_text_of_digits_as_text(
    tmp_path: Path, openai_server_module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ids, gold answers and a model's answers that read as numbers or as pandas' gaps ("007", "3.50", "NA") are
    text: a run rebuilt from its CSV files (`memlab report`) writes every file as the run wrote it."""
    import json

    from memlab.report import load_run
    from memlab.report.rundata import CALL_TEXT, QUESTION_TEXT, run_files

    said = [("11", "The coffee here costs 3.50 a cup."), ("12", "My locker is 007."), ("13", "I was born in NA.")]
    probes = [("1", "How much does the coffee cost?", "3.50"), ("2", "Which locker?", "007"), ("3", "Where?", "NA")]
    line = {
        "id": "7",
        "sessions": [{"id": "1", "messages": [{"id": i, "role": "user", "content": text} for i, text in said]}],
        "probes": [
            {"id": p, "question": q, "answer": a, "evidence": [e], "category": "2"}
            for (p, q, a), (e, _) in zip(probes, said, strict=True)
        ],
    }
    data = tmp_path / "digits.jsonl"
    data.write_text(json.dumps(line) + "\n", encoding="utf-8")
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as server:
        server.replies = [openai_server_module.text_reply(answer) for _, _, answer in probes]
        run = memlab.run(
            [
                "dataset=jsonl", f"dataset.path={data}", "eval.answers=true", "eval.judge=false", "llm=litellm",
                "llm.model=openai/test-model", f"llm.api_base={server.base_url}", "llm.api_key_env=MEMLAB_TEST_KEY",
                "llm.cache_dir=null", "llm.num_retries=0", "debug=default",
            ],
            tmp_path / "run",
        ).run_dir  # fmt: skip
        assert not server.replies  # the model answered every probe
    assert "7,1,2,How much does the coffee cost?,3.50,11," in (run / "questions.csv").read_text()
    assert '{"question_id": "2", "hypothesis": "007"}' in (run / "questions.jsonl").read_text()
    back = load_run(run)
    rebuilt = run_files(back)
    assert {"questions.csv", "calls.csv", "questions.jsonl", "report.md"} <= set(rebuilt)
    for name, text in rebuilt.items():
        assert text == (run / name).read_text(encoding="utf-8"), name
    for table, text_columns in ((back.questions, QUESTION_TEXT), (back.calls, CALL_TEXT)):  # a new text column is named
        assert {c for c in table.columns if any(isinstance(v, str) for v in table[c])} <= set(text_columns)


def test_a_run_that_fails_at_start_is_one_line_and_leaves_none_of_the_folders_made_for_it(tmp_path: Path) -> None:
    """The defects: Hydra's two-line error naming HYDRA_FULL_ERROR, which the API cannot set; the folders above the
    run's (made to know it can publish there) left empty."""
    (tmp_path / "kept").mkdir()
    with pytest.raises(MemlabError) as raised:
        memlab.run([*OVERRIDES, "dataset._target_=nonexistent.Loader"], tmp_path / "kept" / "a" / "b" / "run")
    assert str(raised.value).startswith("ImportError: Error loading 'nonexistent.Loader'"), raised.value
    assert "\n" not in str(raised.value) and "HYDRA_FULL_ERROR" not in str(raised.value)
    assert [p.name for p in tmp_path.rglob("*")] == ["kept"]  # the user's own folder stays, even empty
