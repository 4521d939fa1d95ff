"""Corpus evaluations of the backends, reading corpora through `memlab.dialogues`: summaries, retrieval, answers."""

from memlab.eval.answers import answer_question, answer_rows, context_transcript, evaluate_answers, judge_answer
from memlab.eval.retrieval import (
    HIT_AT,
    RetrievalCase,
    evaluate_retrieval,
    evidence_ranks,
    hit_rates,
    retrieval_cases,
)
from memlab.eval.summary_quality import (
    evaluate_summaries,
    fact_recall,
    rouge_1_recall,
    rouge_l_recall,
    summarized_sessions,
)

__all__ = [
    "HIT_AT",
    "RetrievalCase",
    "answer_question",
    "answer_rows",
    "context_transcript",
    "evaluate_answers",
    "evaluate_retrieval",
    "evaluate_summaries",
    "evidence_ranks",
    "fact_recall",
    "hit_rates",
    "judge_answer",
    "retrieval_cases",
    "rouge_1_recall",
    "rouge_l_recall",
    "summarized_sessions",
]
