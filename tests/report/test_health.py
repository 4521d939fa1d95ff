"""A run that measured nothing says so: stderr warning, report banner, `strict=true` exits non-zero.

Also: a swept parameter that changed no metric is flagged in the comparison.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from in_process import memlab_main
from replays import NO_FIGURES

from memlab.report import find_runs, load_run
from memlab.report.comparison import inert_parameters

SMALL = ("dataset.dialogues=1", "dataset.sessions=2", "context=summarize", "eval.answers=true")
# No assert reads a figure: only the first run that measured nothing draws them (figures of a run whose every call
# failed), the others leave them out (replays.NO_FIGURES).
# No server listens on port 9 (discard) here: a provider that is down.
SERVER_DOWN = ("llm=litellm", "llm.api_base=http://127.0.0.1:9/v1", "llm.api_key_env=MEMLAB_TEST_KEY")
LOCAL = ("llm.model=openai/test-model", "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", "llm.cache_dir=null")


@pytest.fixture
def memlab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str]]:
    """`memlab(*args) -> (exit status, stderr)`: `memlab run ARGS` in this process (tests/in_process.py).

    What is checked is the command's exit status, stderr and files, which a new process would not change; a
    process would pay memlab's and litellm's imports (about 8 CPU s) on every call.
    """
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    for name, value in {"CI": "1", "MEMLAB_TEST_KEY": "sk-test", "MEMLAB_CACHE": str(tmp_path / "cache")}.items():
        monkeypatch.setenv(name, value)

    def run(*args: str) -> tuple[int, str]:
        capfd.readouterr()
        status = memlab_main("run", *args)
        return status, capfd.readouterr().err

    return run


@pytest.mark.parametrize("backend", ["faulty", "server-500"])
def test_every_call_failed_warns_and_strict_fails(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], backend: str, openai_server_module
) -> None:
    """Every call fails: on purpose (llm=faulty), or a server that answers every request with a 500."""
    with contextlib.ExitStack() as stack:
        if backend == "faulty":
            llm: tuple[str, ...] = ("llm=faulty", "llm.rate=1.0", "llm.modes=[error,timeout]")
        else:
            server = stack.enter_context(openai_server_module.serve())
            server.fail_with = [500] * 1000
            llm = ("llm=litellm", f"llm.api_base={server.base_url}", *LOCAL)
        _every_call_failed(tmp_path, memlab, llm)


def _every_call_failed(tmp_path: Path, memlab: Callable[..., tuple[int, str]], llm: tuple[str, ...]) -> None:
    status, stderr = memlab(*SMALL, *llm, f"hydra.run.dir={tmp_path / 'run'}")
    assert status == 0, stderr
    assert "memlab: WARNING: this run measured nothing here: every one of the" in stderr
    assert "answer calls failed" in stderr
    # The defect: these lines were printed after the folder was published, so its run.log never held them.
    log = (tmp_path / "run" / "run.log").read_text().splitlines()
    nothing = [line.split(" memlab.progress: ", 1)[1] for line in log if "this run measured nothing here" in line]
    assert len(nothing) == 2 and "answer calls failed" in nothing[1]
    assert all(stderr.count(f"memlab: WARNING: {line}\n") == 1 for line in nothing)  # once each on stderr
    assert nothing[0].endswith(f"(see {tmp_path / 'run' / 'report.md'})")
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.splitlines()[2].startswith("> **WARNING: this run measured nothing here: every one of the")
    assert 'class="banner">WARNING' in (tmp_path / "run" / "report.html").read_text()
    status, stderr = memlab(*SMALL, *llm, "strict=true", NO_FIGURES, f"hydra.run.dir={tmp_path / 'strict'}")
    assert status == 2
    assert "memlab: error: strict=true and the run measured nothing" in stderr


@pytest.mark.parametrize("rate", ["0.5", "1.0"])
def test_judge_replies_that_say_neither_verdict_are_counted_and_named(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], rate: str
) -> None:
    """llm=faulty's empty replies: a judge that says neither CORRECT nor WRONG gives no verdict; the defect was that
    such questions silently left answer.judge's denominator, counted nowhere and named in no warning."""
    llm = ("llm=faulty", f"llm.rate={rate}", "llm.modes=[empty]")
    status, stderr = memlab(*SMALL, *llm, NO_FIGURES, f"hydra.run.dir={tmp_path / 'run'}")
    assert status == 0, stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    questions = pd.read_csv(tmp_path / "run" / "questions.csv")
    judged = questions[questions.answer.notna() & questions.answer_error.isna()]  # a judge was asked about these
    verdicts = judged["answer.judge"].dropna()
    unparsed = int(judged.judge_unparsed.notna().sum())
    assert set(judged.judge_unparsed.dropna()) == {'""'}  # the empty replies, told from no reply
    assert metrics["answer.judge.unparsed"] == unparsed > 0
    assert len(verdicts) + unparsed + metrics["answer.judge.failures"] == len(judged)
    expected = f"{unparsed} of the {metrics['answer.questions']} questions asked got a judge reply that said neither"
    assert f"memlab: WARNING: {expected}" in stderr
    if rate == "1.0":  # every judge reply empty: no verdict at all
        assert metrics["answer.judge"] is None and verdicts.empty
        assert "this run measured nothing here: no answer was judged" in stderr
    else:
        assert len(verdicts) > 0 and metrics["answer.judge"] == pytest.approx(verdicts.mean(), abs=1e-6)


@pytest.mark.parametrize("where", ["down", "404"])
def test_a_model_that_cannot_be_reached_stops_the_run(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], openai_server_module, where: str
) -> None:
    """The defect: with no server at llm.api_base, or one that has no such model, every call fell back and the run
    exited 0 after all of them; it now stops at the first call, retries spent, in one line, and publishes nothing."""
    with contextlib.ExitStack() as stack:
        llm: tuple[str, ...] = (*SERVER_DOWN, *LOCAL)
        if where == "404":
            server = stack.enter_context(openai_server_module.serve())
            server.fail_with = [404] * 100
            llm = ("llm=litellm", f"llm.api_base={server.base_url}", *LOCAL)
        status, stderr = memlab(*SMALL, *llm, NO_FIGURES, f"output_dir={tmp_path / 'run'}")
        assert where == "down" or len(server.requests) == 1
    assert status == 2
    [line] = stderr.splitlines()
    what = "unreachable" if where == "down" else "not served"
    assert line.startswith("memlab: error: llm: openai/test-model at http://127.0.0.1:") and f" is {what} " in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("model", ["test-model", "gpt-4o-mini"])
def test_a_model_the_price_table_does_not_know_is_named(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], openai_server_module, model: str
) -> None:
    """The defect: a provider model that litellm's price table does not know (a local server's) was priced at
    pricing.model's rates without a word, so cost.usd read as that model's bill. The server answers in the name it
    was asked for: gpt-4o-mini is in the table."""
    with openai_server_module.serve() as server:
        llm = ("llm=litellm", f"llm.api_base={server.base_url}", *LOCAL, f"llm.model=openai/{model}")
        status, stderr = memlab(*SMALL, *llm, NO_FIGURES, f"hydra.run.dir={tmp_path / 'run'}")
    assert status == 0, stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    said = [line for line in stderr.splitlines() if "price table does not know" in line]
    if model == "gpt-4o-mini":
        assert said == []
        return
    calls, answers = metrics["llm.calls"], metrics["answer.calls"]
    rates = "prices those calls at pricing.model=gpt-4o-mini's rates; set pricing.model to a model the table knows"
    assert said == [
        f"memlab: WARNING: litellm's price table does not know test-model ({answers:,} calls), so answer.cost_usd "
        f"{rates} that bills as yours does",
        f"memlab: WARNING: litellm's price table does not know test-model ({calls:,} calls), so cost.usd {rates} that "
        "bills as yours does",
    ]
    assert all(line.removeprefix("memlab: WARNING: ") in (tmp_path / "run" / "run.log").read_text() for line in said)


def test_a_run_that_measured_something_has_no_warning(tmp_path: Path, memlab: Callable[..., tuple[int, str]]) -> None:
    status, stderr = memlab(*SMALL, "strict=true", NO_FIGURES, f"hydra.run.dir={tmp_path / 'run'}")
    assert status == 0, stderr
    assert "WARNING" not in stderr and "WARNING" not in (tmp_path / "run" / "report.md").read_text()


def test_a_swept_parameter_that_changed_nothing_is_flagged(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]]
) -> None:
    # a window far larger than the history changes nothing; the data's seed does
    sweep = tmp_path / "sweep"
    status, stderr = memlab(
        "-m",
        "dataset.dialogues=1",
        "dataset.sessions=2",
        "dataset.seed=1,2",
        "context=sliding_window",
        "context.strategy.max_tokens=900000,1000000",
        NO_FIGURES,
        f"hydra.sweep.dir={sweep}",
    )
    assert status == 0, stderr
    runs = [load_run(p) for p in find_runs([sweep])]
    assert len(runs) == 4
    assert inert_parameters(runs) == ["context.strategy.max_tokens"]
    text = (sweep / "comparison.md").read_text()
    assert "Swept but changed no metric: context.strategy.max_tokens" in text
    assert "Swept but changed no metric" in (sweep / "comparison.html").read_text()
    assert "memlab: WARNING: Swept but changed no metric: context.strategy.max_tokens" in stderr
    assert "check that context.strategy.max_tokens reaches the strategy" in text


def test_a_group_choice_that_changed_nothing_is_not_said_to_miss_the_strategy() -> None:
    """The defect: context=summarize,composite (the same numbers here) was told to check that the key reached the
    strategy; a group's choice is the strategy that runs."""
    from memlab.report.comparison import inert_note

    note = inert_note(["context"])
    assert note.startswith("Swept but changed no metric: context (") and "reaches the strategy" not in note


def test_a_model_that_echoes_warns_that_most_summaries_fell_back(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], openai_server_module
) -> None:
    """The server answers with the prompt reversed word by word: no summary is shorter than its source. It answers
    as gpt-4o-mini, a model the price table knows (another would be named in a warning of its own)."""
    with openai_server_module.serve() as server:
        echo = (
            "llm=litellm", "llm.model=openai/gpt-4o-mini", f"llm.api_base={server.base_url}",
            "llm.api_key_env=MEMLAB_TEST_KEY", "llm.num_retries=0", f"llm.cache_dir={tmp_path / 'cache'}",
        )  # fmt: skip
        status, stderr = memlab(*SMALL[:3], *echo, NO_FIGURES, f"hydra.run.dir={tmp_path / 'first'}")
        memlab(*SMALL[:3], *echo, NO_FIGURES, f"hydra.run.dir={tmp_path / 'again'}")  # from the cache
    assert status == 0, stderr
    metrics = json.loads((tmp_path / "first" / "metrics.json").read_text())
    asked = metrics["summary.count"]
    assert asked > 0 and metrics["summary.fallbacks"] == metrics["summary.violations"] == asked
    warning = f"memlab: WARNING: {asked:,} of {asked:,} summaries were not used: the strategies took their fallbacks"
    assert next(line for line in stderr.splitlines() if "WARNING" in line).startswith(warning)
    said = warning.removeprefix("memlab: WARNING: ")
    assert said in (tmp_path / "first" / "run.log").read_text()
    # and in the report's banner, as a run that measured nothing is: its summary cards describe the fallbacks
    assert f"> **WARNING: {said}" in (tmp_path / "first" / "report.md").read_text()
    assert f'<div class="banner warn">WARNING: {said}' in (tmp_path / "first" / "report.html").read_text()
    calls, repeats = metrics["llm.calls"], json.loads((tmp_path / "first" / "latency.json").read_text())
    hits = repeats["latency.cached_calls"]  # a request repeated within the run
    assert (
        hits < calls
        and f"{hits:,} of {calls:,} model calls were answered from a cache"
        in (tmp_path / "first" / "report.md").read_text()
    )
    cached = f"{calls:,} of {calls:,} model calls were answered from a cache"
    assert cached in (tmp_path / "again" / "report.md").read_text()
    assert cached in (tmp_path / "again" / "report.html").read_text()


def test_failed_calls_say_why_in_run_log_and_once_on_stderr(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], openai_server_module, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defect: with the server failing, metrics said `llm.failures: 20` and run.log was empty; nothing named the
    status or the provider's message, so a wrong model name, a bad request and an outage read the same. A key the
    provider's message echoes is masked: the run's own (named by `llm.api_key_env`, whatever the variable's name)
    and anything shaped like one."""
    key = "provider-credential-4f9a2c81d7"  # named by a variable whose name does not say KEY
    monkeypatch.setenv("MEMLAB_PROVIDER_AUTH", key)

    def error(status: int, message: str) -> tuple[int, dict[str, object], dict[str, str]]:
        return status, {"error": {"message": message, "type": "server_error", "code": status}}, {}

    answer = (200, {"object": "chat.completion", "choices": [{"index": 0, "message": {"content": "Ann."}}]}, {})
    with openai_server_module.serve() as server:
        server.replies = [
            answer,  # answered once: a 404 later is a failed call, not an unreachable model (which stops the run)
            *[error(500, f"upstream overloaded (request signed with {key})")] * 7,
            *[error(429, "Rate limit reached for sk-other-abcdef123456")] * 5,
            *[error(404, "The model `test-model` does not exist")] * 4,
            *[(200, {"id": "chatcmpl-1", "object": "chat.completion", "choices": []}, {})] * 3,  # no first choice
        ]
        llm = (
            "llm=litellm", "llm.model=openai/test-model", f"llm.api_base={server.base_url}",
            "llm.api_key_env=MEMLAB_PROVIDER_AUTH", "llm.num_retries=0", "llm.cache_dir=null",
        )  # fmt: skip
        status, stderr = memlab(*SMALL[:3], *llm, NO_FIGURES, f"hydra.run.dir={tmp_path / 'run'}")
        assert server.rejected == [] and not server.replies and len(server.requests) == 20
    assert status == 0, stderr
    run = tmp_path / "run"
    metrics = json.loads((run / "metrics.json").read_text())
    assert (metrics["llm.calls"], metrics["llm.failures"]) == (20, 19)
    said = (
        "19 of 20 model calls the strategies made failed (llm.failures): "
        "7 x InternalServerError (500: litellm.InternalServerError: InternalServerError: OpenAIException - upstream "
        "overloaded (request signed with ***)), "
        "5 x RateLimitError (429: litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
        "sk-***), "
        "4 x NotFoundError (404: litellm.NotFoundError: NotFoundError: OpenAIException - The model `test-model` does "
        "not exist), "
        "3 x LLMError (openai/test-model: malformed response without a first choice's message)"
    )
    log = (run / "run.log").read_text()
    assert f"WARNING memlab.progress: {said}\n" in log
    assert stderr.count(said) == 1 and f"memlab: WARNING: {said}\n" in stderr
    for path in run.iterdir():  # the key is nowhere: not in a log line, a report or a record
        assert key not in path.read_text(errors="replace") and "abcdef123456" not in path.read_text(errors="replace")
    assert key not in stderr


def test_every_answer_empty_is_counted_warned_and_measured_nothing(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], openai_server_module
) -> None:
    """The defect: a model answering ``content: null`` to every question was scored and judged without a word
    (answer.judge 0.5 on empty answers, exit 0, nothing in run.log). Empty answers are counted (answer.empty), kept
    in questions.jsonl as empty hypotheses (LongMemEval scores them wrong), and all of them empty measured nothing."""
    null = (200, {"object": "chat.completion", "choices": [{"index": 0, "message": {"content": None}}]}, {})
    with openai_server_module.serve() as server:
        server.replies = [null] * 500
        llm = ("llm=litellm", f"llm.api_base={server.base_url}", *LOCAL)
        status, stderr = memlab(*SMALL, *llm, NO_FIGURES, f"hydra.run.dir={tmp_path / 'run'}")
        strict, said = memlab(*SMALL, *llm, NO_FIGURES, "strict=true", f"hydra.run.dir={tmp_path / 'strict'}")
    assert status == 0, stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    asked = metrics["answer.questions"]
    assert asked > 0 and metrics["answer.empty"] == asked and metrics["answer.failures"] == 0
    hypotheses = [json.loads(line)["hypothesis"] for line in (tmp_path / "run" / "questions.jsonl").open()]
    assert hypotheses == [""] * asked
    warning = f"every answer the model gave was empty ({asked:,} of the {asked:,} questions asked, answer.empty"
    assert f"memlab: WARNING: this run measured nothing here: {warning}" in stderr
    assert warning in (tmp_path / "run" / "run.log").read_text()
    assert strict == 2 and "strict=true and the run measured nothing" in said


def test_retried_calls_are_counted_and_said(
    tmp_path: Path, memlab: Callable[..., tuple[int, str]], openai_server_module
) -> None:
    """The defect: calls that succeeded on a retry left no trace (metrics, run.log and calls as in a clean run), so
    a rate-limited provider read as a healthy one. Every request the server got is now a call or a counted retry."""
    with openai_server_module.serve() as server:
        server.fail_with = [500, 500, 500]  # the first call: retried once, then failed; the second: retried once
        llm = ("llm=litellm", f"llm.api_base={server.base_url}", *LOCAL, "llm.num_retries=1")
        status, stderr = memlab(*SMALL, *llm, NO_FIGURES, f"hydra.run.dir={tmp_path / 'run'}")
        sent = len(server.requests)
    assert status == 0, stderr
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert (metrics["llm.retries"], metrics["answer.retries"], metrics["llm.failures"]) == (2, 0, 1)
    assert sent == metrics["llm.calls"] + metrics["llm.retries"] + metrics["answer.calls"] + metrics["answer.retries"]
    said = f"2 of {metrics['llm.calls']:,} model calls the strategies made were retried (2 retries, llm.retries; 1 of"
    assert f"memlab: WARNING: {said}" in stderr and said in (tmp_path / "run" / "run.log").read_text()
