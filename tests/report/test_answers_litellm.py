"""Answer evaluation through the litellm backend over real HTTP, and its cache (a repeat makes no request)."""

from __future__ import annotations

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
