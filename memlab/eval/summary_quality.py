"""How good the extractive summaries are: recall against LoCoMo's gold `session_summary`.

Each LoCoMo session (as `memlab.dialogues.load_locomo` reads it, image captions included) is rendered
as the transcript a summarizer receives and summarized at the gold summary's token length; the
extractive summary and the first-sentences baseline are scored by ROUGE-1 and ROUGE-L recall
(Lin 2004, over lower-cased terms) and by the recall of the gold summary's facts (numbers, dates,
proper names). `python experiments/summary_quality.py` prints them.

>>> rouge_l_recall("Ann moved to Oslo in 2021", "In 2021 Ann moved to Oslo")
0.6666666666666666
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

from memlab.dialogues import Dialogue
from memlab.llm.prompts import render_transcript
from memlab.llm.summarize import extractive_summary, first_sentences
from memlab.messages import Message
from memlab.text import fact_tokens, terms
from memlab.tokens import get_counter


def rouge_1_recall(reference: str, candidate: str) -> float:
    """Share of the reference's terms (with multiplicity) that the candidate contains.

    Args:
        reference: The gold summary.
        candidate: The summary scored.
    """
    ref, cand = Counter(terms(reference)), Counter(terms(candidate))
    total = sum(ref.values())
    return sum((ref & cand).values()) / total if total else 0.0


def rouge_l_recall(reference: str, candidate: str) -> float:
    """Longest common subsequence of terms over the reference's length.

    Args:
        reference: The gold summary.
        candidate: The summary scored.
    """
    ref, cand = terms(reference), terms(candidate)
    if not ref:
        return 0.0
    previous = [0] * (len(cand) + 1)
    for r in ref:
        current = [0]
        for j, c in enumerate(cand):
            current.append(previous[j] + 1 if r == c else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1] / len(ref)


def fact_recall(reference: str, candidate: str) -> float:
    """Share of the reference's numbers, dates and proper names that appear among the candidate's terms.

    Args:
        reference: The gold summary.
        candidate: The summary scored.
    """
    facts = fact_tokens(reference)
    return len(facts & set(terms(candidate))) / len(facts) if facts else 0.0


def summarized_sessions(dialogues: Iterable[Dialogue]) -> Iterator[tuple[str, tuple[Message, ...], str]]:
    """(``dialogue/session`` key, the session's messages, its gold summary) for every summarized session.

    Args:
        dialogues: Dialogues whose sessions have gold summaries.
    """
    for dialogue in dialogues:
        summaries = dialogue.metadata.get("session_summaries", {})
        for session in dialogue.sessions:
            gold = summaries.get(session.id)
            if session.messages and gold:
                yield f"{dialogue.id}/{session.id}", session.messages, gold


def evaluate_summaries(dialogues: Iterable[Dialogue], counter: str = "cl100k_base") -> dict[str, dict[str, float]]:
    """Mean recall figures of the extractive summary and the first-sentences baseline, per method.

    Args:
        dialogues: Dialogues whose sessions have gold summaries (LoCoMo).
        counter: The token counter of the summaries' budget.
    """
    count = get_counter(counter).count_text
    methods = {
        "extractive": lambda t, b: extractive_summary(t, b, counter),
        "first_sentences": lambda t, b: first_sentences(t, b, counter),
    }
    sums: dict[str, dict[str, float]] = {name: defaultdict(float) for name in methods}
    sessions = 0
    for _, messages, gold in summarized_sessions(dialogues):
        transcript = render_transcript(messages)
        budget = count(gold)
        sessions += 1
        for name, method in methods.items():
            candidate = method(transcript, budget)
            sums[name]["rouge1_recall"] += rouge_1_recall(gold, candidate)
            sums[name]["rougeL_recall"] += rouge_l_recall(gold, candidate)
            sums[name]["fact_recall"] += fact_recall(gold, candidate)
            sums[name]["tokens"] += count(candidate)
    return {name: {"sessions": sessions, **{k: v / sessions for k, v in sorted(s.items())}} for name, s in sums.items()}
