"""Whether a run measured anything: a run whose every model call failed must say so, loudly.

A missing API key or a server that is down makes every summary, extraction or answer call fail;
the strategies fall back and the run still writes numbers, which then describe the fallbacks and
not the configuration. `measurement_warnings` names each such case; the run prints them on
stderr, the report puts them in a banner at the top, and `strict=true` turns them into an error.
`fallback_warnings` names the milder case, where the model answered but most summaries were not
used (a model that echoes writes none shorter than its source), or most answers were empty: the report's banner
says it too (amber, not red: the model answered). `retried_call_warnings` says how many calls a provider made
memlab retry. `failed_call_warnings` says why model calls failed (per provider error and HTTP
status, how many and the first one's message), so that a wrong model name, a bad request and an outage read
differently; the run logs them on stderr and in run.log,
and so `empty_request_warnings`: requests a context strategy left empty (a peer may cut all at a tiny
budget) or left with its system messages alone (a budget below their tokens). The last two are read from
the run's records, so that a parallel replay's are counted once for the whole run.

>>> measurement_warnings({"llm.calls": 4, "llm.failures": 4})[0][:40]
'every one of the 4 model calls the strat'
>>> fallback_warnings({"llm.calls": 16, "summary.count": 16, "summary.fallbacks": 16, "summary.violations": 16})[0][:38]
'16 of 16 summaries were not used: the '
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memlab.metrics.events import call_retries
from memlab.trace import CONTEXT_APPLY, LLM_CALL, Event


def _count(metrics: Mapping[str, Any], name: str) -> int:
    value = metrics.get(name)
    return int(value) if isinstance(value, int | float) and value == value else 0


def _answer_call_failures(metrics: Mapping[str, Any]) -> int:
    """The answer calls that failed: answer.failures counts the judge's failed calls too (asked after an answer)."""
    return _count(metrics, "answer.failures") - _count(metrics, "answer.judge.failures")


def measurement_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """One sentence per part of the run that measured nothing because all its model calls failed."""
    out = []
    calls, failures = _count(metrics, "llm.calls"), _count(metrics, "llm.failures")
    if calls and failures >= calls:
        out.append(
            f"every one of the {calls:,} model calls the strategies made failed (llm.failures = llm.calls): "
            "summaries and extraction are fallbacks, not the configured model's work"
        )
    asked, judged = _count(metrics, "answer.questions"), _count(metrics, "answer.judge.failures")
    failed = _answer_call_failures(metrics)
    if asked and failed >= asked:
        out.append(
            f"every one of the {asked:,} answer calls failed (answer.failures = answer.questions): no answer was scored"
        )
    empty = _count(metrics, "answer.empty")
    if asked and empty and failed < asked and failed + empty >= asked:
        out.append(
            f"every answer the model gave was empty ({empty:,} of the {asked:,} questions asked, answer.empty; "
            f"{failed:,} answer calls failed): the answer scores and answer.judge grade empty answers"
        )
    unparsed = _count(metrics, "answer.judge.unparsed")
    if (judged or unparsed) and metrics.get("answer.judge") is None:
        out.append(
            f"no answer was judged: {judged:,} judge calls failed (answer.judge.failures), {unparsed:,} judge replies "
            "said neither CORRECT nor WRONG (answer.judge.unparsed) and no other gave a verdict "
            "(answer.judge is undefined)"
        )
    return out


def unparsed_judge_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """A sentence when judge replies said neither CORRECT nor WRONG: no verdict, so answer.judge's denominator shrank.

    >>> unparsed_judge_warnings({"answer.questions": 8, "answer.judge.unparsed": 2})[0][:40]
    '2 of the 8 questions asked got a judge r'
    """
    unparsed = _count(metrics, "answer.judge.unparsed")
    if not unparsed:
        return []
    return [
        f"{unparsed:,} of the {_count(metrics, 'answer.questions'):,} questions asked got a judge reply that said "
        "neither CORRECT nor WRONG (answer.judge.unparsed; the reply is judge_unparsed in questions.csv): they have no "
        "verdict, and answer.judge is the share of CORRECT among the verdicts given"
    ]


def fallback_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """One sentence when most summaries fell back (all calls failed: see above; why: `failed_call_warnings`), and one
    when most answers were empty (all of them: `measurement_warnings`).

    >>> fallback_warnings({"answer.questions": 8, "answer.empty": 5})[0][:31]
    '5 of the 8 answers were empty ('
    """
    out = _empty_answer_warnings(metrics)
    calls, failures = _count(metrics, "llm.calls"), _count(metrics, "llm.failures")
    if calls and failures >= calls:
        return out  # measurement_warnings says so
    asked, unused = _count(metrics, "summary.count"), _count(metrics, "summary.fallbacks")
    if unused * 2 > asked:
        why = {k: _count(metrics, f"summary.{k}") for k in ("violations", "empty", "failed")}
        out.append(
            f"{unused:,} of {asked:,} summaries were not used: the strategies took their fallbacks "
            f"(summary.fallbacks; {why['violations']:,} longer than their source, {why['empty']:,} empty, "
            f"{why['failed']:,} failed), so the summary metrics describe the fallbacks, not the model's summaries"
        )
    return out


def _empty_answer_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """A sentence when most answers the model gave were empty, but not all (`measurement_warnings` says that)."""
    asked, empty, failed = (
        _count(metrics, "answer.questions"),
        _count(metrics, "answer.empty"),
        _answer_call_failures(metrics),
    )
    if not empty * 2 > asked - failed or failed + empty >= asked:
        return []
    return [
        f"{empty:,} of the {asked - failed:,} answers were empty (answer.empty): the model wrote no text, so the "
        "answer scores grade empty texts (questions.jsonl holds them as empty hypotheses, which LongMemEval scores as "
        "wrong)"
    ]


def unanswered_warnings(metrics: Mapping[str, Any]) -> list[str]:
    """A sentence when answer calls failed: those questions are left out of questions.jsonl, and how many.

    >>> unanswered_warnings({"answer.questions": 8, "answer.failures": 3, "answer.judge.failures": 1})[0][:36]
    'questions.jsonl leaves out 2 of the '
    """
    asked = _count(metrics, "answer.questions")
    failed = _answer_call_failures(metrics)
    if not failed:
        return []
    return [
        f"questions.jsonl leaves out {failed:,} of the {asked:,} questions asked: their answer call failed "
        "(answer_error in questions.csv), and LongMemEval's evaluate_qa.py would score an empty hypothesis as a wrong "
        "answer; its accuracy is over the questions in the file"
    ]


def failed_call_warnings(
    events: Iterable[Event], calls: str = "model calls the strategies made", metric: str = "llm.failures"
) -> list[str]:
    """One sentence when model calls failed: how many, and per distinct reason (the provider's error class and HTTP
    status) how many and the first one's message, as the calls' LLM_CALL events recorded them.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
        calls: What the calls are, as the sentence names them.
        metric: The metric that counts the failures.

    >>> from memlab.trace import Event
    >>> failed = {"failed": True, "cause": "RateLimitError", "status": 429, "message": "slow down"}
    >>> failed_call_warnings([Event(LLM_CALL, failed), Event(LLM_CALL, {"failed": False})])
    ['1 of 2 model calls the strategies made failed (llm.failures): 1 x RateLimitError (429: slow down)']
    """
    made = 0
    reasons: dict[tuple[str, Any], list[Any]] = {}  # (cause, status) -> [calls, first message], first seen first
    for e in events:
        if e.kind != LLM_CALL:
            continue
        made += 1
        d = e.data
        if d.get("failed"):
            seen = reasons.setdefault((str(d.get("cause") or d.get("error") or "error"), d.get("status")), [0, None])
            seen[0] += 1
            seen[1] = seen[1] or d.get("message")
    if not reasons:
        return []
    parts = []
    for (cause, status), (n, message) in sorted(reasons.items(), key=lambda item: -item[1][0]):  # stable: ties by order
        said = ": ".join(str(x) for x in (status, message) if x is not None)
        parts.append(f"{n:,} x {cause}" + (f" ({said})" if said else ""))
    failed = sum(n for n, _ in reasons.values())
    return [f"{failed:,} of {made:,} {calls} failed ({metric}): {', '.join(parts)}"]


def retried_call_warnings(
    events: Iterable[Event], calls: str = "model calls the strategies made", metric: str = "llm.retries"
) -> list[str]:
    """One sentence when model calls were retried (their LLM_CALL events' ``attempts`` above 1): how many calls, how
    many retries, and how many failed even so, so that a rate-limited or flaky provider reads apart from a healthy one.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
        calls: What the calls are, as the sentence names them.
        metric: The metric that counts the retries.

    >>> from memlab.trace import Event
    >>> retried_call_warnings([Event(LLM_CALL, {"attempts": 3}), Event(LLM_CALL, {"attempts": 1})])[0][:58]
    '1 of 2 model calls the strategies made were retried (2 ret'
    """
    made = [e.data for e in events if e.kind == LLM_CALL]
    retried = [d for d in made if call_retries(d)]
    if not retried:
        return []
    failed = sum(1 for d in retried if d.get("failed"))
    return [
        f"{len(retried):,} of {len(made):,} {calls} were retried ({sum(call_retries(d) for d in retried):,} retries, "
        f"{metric}; {failed:,} of those calls failed even so): the provider refused or failed first (a rate limit, a "
        "5xx, a timeout), and those calls' latency holds the waits"
    ]


def unpriced_warnings(events: Iterable[Event], pricing_model: str, cost: str = "cost.aux_usd") -> list[str]:
    """A sentence when provider models that answered are missing from litellm's price table: their calls are
    priced at `pricing_model`'s rates, which a user must know to read `cost` (`memlab.metrics.unpriced_models`).

    >>> from memlab.trace import Event
    >>> unpriced_warnings([Event(LLM_CALL, {"backend": "litellm", "model": "my-llama"})], "gpt-4o-mini")[0][:58]
    "litellm's price table does not know my-llama (1 call), so "
    """
    from memlab.metrics.pricing import unpriced_models

    found = unpriced_models(events)
    if not found:
        return []
    named = ", ".join(f"{m} ({n:,} call{'s' if n != 1 else ''})" for m, n in found.items())
    return [
        f"litellm's price table does not know {named}, so {cost} prices those calls at pricing.model={pricing_model}'s "
        "rates; set pricing.model to a model the table knows that bills as yours does"
    ]


def empty_request_warnings(events: Iterable[Event]) -> list[str]:
    """A sentence when a context strategy sent empty requests, and one when it sent only system messages.

    Args:
        events: Events of a run's records (`memlab.metrics.all_events`).
    """
    applied = [e.data for e in events if e.kind == CONTEXT_APPLY]
    empty = [d for d in applied if d.get("messages_in") and not d["messages_out"]]
    no_turn = [d for d in applied if d.get("no_turn") and d["messages_out"]]
    out = []
    if empty:
        out.append(
            f"context strategy {empty[0]['strategy']!r} sent {len(empty):,} empty requests (the first for a history "
            f"of {empty[0]['messages_in']:,} messages; a model would refuse them): its token figures count requests "
            "that could not be sent"
        )
    if no_turn:
        out.append(
            f"context strategy {no_turn[0]['strategy']!r} sent only system messages, no turn to answer, on "
            f"{len(no_turn):,} of {len(applied):,} requests (a budget below the system messages' tokens does this; "
            f"the first kept {no_turn[0]['tokens_out']:,} tokens of {no_turn[0]['tokens_in']:,}): its figures "
            "describe requests a model could not answer"
        )
    return out
