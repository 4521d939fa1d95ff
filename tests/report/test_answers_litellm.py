"""Answer evaluation through the litellm backend over real HTTP, and its cache (a repeat makes no request)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from memlab.experiment import run_experiment


def test_answers_go_through_litellm_and_its_cache(
    make_config, openai_server_module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server_module = openai_server_module
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with server_module.serve() as server:
        cfg = make_config(
            "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "eval.answers=true", "llm=litellm",
            "llm.model=openai/test-model", f"llm.api_base={server.base_url}", "llm.api_key_env=MEMLAB_TEST_KEY",
            f"llm.cache_dir={tmp_path / 'cache'}", "llm.num_retries=0",
        )  # fmt: skip
        first = run_experiment(cfg, tmp_path / "a")
        bodies = server.bodies("/v1/chat/completions")
        questions = pd.read_csv(first.run_dir / "questions.csv")
        answerable = questions[questions["answer"].notna()]
        assert len(bodies) == 2 * len(answerable)  # one answer and one judge call per answerable question
        asked = [b["messages"][-1]["content"] for b in bodies[::2]]
        assert all(f"Question: {q}" in text for q, text in zip(answerable["question"], asked, strict=True))
        # the server replies with the prompt reversed word by word: that is the generated answer
        assert answerable["generated"].tolist() == [server_module.reply_to(b) for b in bodies[::2]]
        assert first.metrics["answer.failures"] == 0 and first.metrics["answer.judge"] is None  # no CORRECT/WRONG
        second = run_experiment(cfg, tmp_path / "b")
        assert len(server.bodies("/v1/chat/completions")) == len(bodies), "the repeat must come from the cache"
    assert (first.run_dir / "metrics.json").read_bytes() == (second.run_dir / "metrics.json").read_bytes()


def test_refused_credentials_stop_the_run_after_one_request(
    make_config, openai_server_module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: with no valid key every call failed, each retried, and the run still exited 0."""
    server_module = openai_server_module
    monkeypatch.setenv("MEMLAB_WRONG_KEY", "sk-wrong")
    with server_module.serve() as server:
        server.replies = [(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}}, {})] * 50
        cfg = make_config(
            "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "eval.answers=true", "llm=litellm",
            "llm.model=openai/test-model", f"llm.api_base={server.base_url}", "llm.api_key_env=MEMLAB_WRONG_KEY",
            "llm.cache_dir=null", "llm.num_retries=3",
        )  # fmt: skip
        from memlab.llm import LLMAuthError

        with pytest.raises(LLMAuthError, match=r"^llm: openai/test-model: authentication failed; set MEMLAB_WRONG_KEY"):
            run_experiment(cfg, tmp_path / "run")
        assert len(server.requests) == 1
    assert not (tmp_path / "run").exists()


def _litellm_at(server, cache: str = "null") -> tuple[str, ...]:
    return (
        "llm=litellm", "llm.model=openai/test-model", f"llm.api_base={server.base_url}",
        "llm.api_key_env=MEMLAB_TEST_KEY", f"llm.cache_dir={cache}", "llm.num_retries=0",
    )  # fmt: skip


def _is_judge(body: dict) -> bool:
    return body.get("max_tokens") == 4  # the judge asks for CORRECT or WRONG


def test_failed_judge_calls_are_counted_and_said(
    make_config, openai_server_module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: with every judge call failing, `answer.failures` was 0 and `answer.judge` null without a word,
    though the metric counts "answer or judge calls that failed"."""
    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as server:
        server.fail_with, server.fail_when = [503] * 100, _is_judge
        cfg = make_config(
            "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "eval.answers=true",
            *_litellm_at(server),
        )  # fmt: skip
        result = run_experiment(cfg, tmp_path / "run")
        judged = [b for b in server.bodies("/v1/chat/completions") if _is_judge(b)]
        assert server.rejected == [] and len(server.fail_with) == 100 - len(judged)
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    questions = pd.read_csv(result.run_dir / "questions.csv", keep_default_na=False)
    with_gold = questions[questions["answer"] != ""]
    assert len(judged) == len(with_gold) > 0
    assert metrics["answer.failures"] == len(judged)
    assert metrics["answer.judge.failures"] == len(judged)
    assert metrics["answer.judge"] is None and metrics["answer.f1.locomo"] is not None  # the answers were scored
    assert set(with_gold["judge_error"]) == {"ServiceUnavailableError (503)"} and set(questions["answer_error"]) == {""}
    log = (result.run_dir / "run.log").read_text()
    assert f"this run measured nothing here: no answer was judged: {len(judged)} judge calls failed" in log
    assert "questions.jsonl leaves out" not in log  # every answer call succeeded
    assert len((result.run_dir / "questions.jsonl").read_text().splitlines()) == metrics["answer.questions"]


def test_questions_whose_answer_call_failed_are_left_out_of_questions_jsonl(
    make_config, openai_server_module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: an answer call that failed was written as ``"hypothesis": ""``, which LongMemEval's evaluate_qa.py
    (it reads every line's question_id and hypothesis, and no other field) scores as a wrong answer."""
    from memlab.report import load_run
    from memlab.report.rundata import run_files

    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as server:
        server.fail_with, server.fail_when = [500, 500], lambda body: not _is_judge(body)  # the first two answers
        cfg = make_config(
            "dataset=longmemeval", "dataset.path=datasets/longmemeval_sample.json", "eval.answers=true",
            "eval.judge=false", *_litellm_at(server),
        )  # fmt: skip
        result = run_experiment(cfg, tmp_path / "run")
        assert server.rejected == [] and not server.fail_with and len(server.requests) == 6  # one per question
    run = result.run_dir
    lines = [json.loads(line) for line in (run / "questions.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(line["hypothesis"] for line in lines)  # each the server's reply, no failure's ""
    questions = pd.read_csv(run / "questions.csv", keep_default_na=False, dtype=str)
    failed = questions[questions["answer_error"] != ""]
    assert list(failed["answer_error"]) == ["InternalServerError (500)"] * 2 and set(failed["generated"]) == {""}
    assert [line["question_id"] for line in lines] == list(questions[questions["answer_error"] == ""]["probe"])
    metrics = json.loads((run / "metrics.json").read_text())
    assert (metrics["answer.questions"], metrics["answer.failures"], metrics["answer.judge.failures"]) == (6, 2, 0)
    said = "questions.jsonl leaves out 2 of the 6 questions asked: their answer call failed"
    assert said in (run / "run.log").read_text()
    assert run_files(load_run(run))["questions.jsonl"] == (run / "questions.jsonl").read_text()  # read back the same


def test_answer_and_judge_calls_are_counted_in_tokens_and_cost(
    make_config, openai_server_module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: the server answered the answer and judge calls, but `llm.calls`, `tokens.aux.total` and
    `cost.aux_usd` were 0 and nothing else counted them. They are `answer.calls`, `answer.tokens.*` and
    `answer.cost_usd` (the `tokens.aux.*` are the strategies' own calls), from the usage the server reported; a
    failed one is counted in none of the tokens and is said, with its reason, in run.log."""
    from memlab.metrics.pricing import model_price

    monkeypatch.setenv("MEMLAB_TEST_KEY", "sk-test")
    with openai_server_module.serve() as server:
        server.fail_with = [429]  # the first answer call
        cfg = make_config(
            "dataset=synthetic", "dataset.dialogues=1", "dataset.sessions=2", "eval.answers=true",
            *_litellm_at(server),
        )  # fmt: skip
        result = run_experiment(cfg, tmp_path / "run")
        bodies = server.bodies("/v1/chat/completions")
        assert server.rejected == [] and not server.fail_with
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    answered = len(bodies) - 1  # each reported openai_server.USAGE
    usage = openai_server_module.USAGE
    assert metrics["llm.calls"] == 0 and metrics["tokens.aux.total"] == 0  # no strategy asked the model
    assert metrics["answer.calls"] == len(bodies) > 1
    assert metrics["answer.tokens.prompt"] == answered * usage["prompt_tokens"]
    assert metrics["answer.tokens.completion"] == answered * usage["completion_tokens"]
    assert metrics["answer.tokens.total"] == answered * usage["total_tokens"]
    price = model_price(cfg.pricing.model)  # "test-model" is not in the price table: the run's pricing.model
    each = usage["prompt_tokens"] * price.input_per_token + usage["completion_tokens"] * price.output_per_token
    assert metrics["answer.cost_usd"] == pytest.approx(answered * each, abs=1e-6) and metrics["answer.cost_usd"] > 0
    said = f"1 of {len(bodies)} answer and judge calls failed (answer.failures): 1 x RateLimitError (429: "
    assert said in (result.run_dir / "run.log").read_text()
