"""The offline default embedder: unit-length float32 rows, deterministic, cached, and good enough to retrieve."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memlab.embed import HashingEmbedder
from memlab.embed.retrieval_eval import evaluate_locomo, evidence_ranks, locomo_conversations, turn_text
from memlab.trace import EMBED_CALL, recording


def test_rows_are_unit_float32_and_deterministic_across_instances() -> None:
    texts = ["I moved to Oslo in 2021.", "我喜欢喝茶", "!!!", ""]
    a, b = HashingEmbedder().embed(texts), HashingEmbedder().embed(texts)
    assert a.dtype == np.float32 and a.shape == (4, 768)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a[:3], axis=1), 1.0, rtol=1e-6)
    assert not a[3].any()  # nothing to hash: the zero vector, not NaN
    assert HashingEmbedder().embed([]).shape == (0, 768)


def test_similar_wording_is_closer_than_unrelated_text() -> None:
    q, near, far = HashingEmbedder(dim=384).embed(
        ["When did Caroline go to the LGBTQ support group?", "I went to a LGBTQ support group yesterday", "Pottery!"]
    )
    assert q @ near > 0.3 > q @ far


def test_each_distinct_text_is_embedded_once() -> None:
    embedder = HashingEmbedder()
    with recording() as events:
        first = embedder.embed(["a b c", "d e f", "a b c"])
        embedder.embed(["d e f", "g h i"])
    assert [e.data["texts"] for e in events if e.kind == EMBED_CALL] == [2, 1]
    np.testing.assert_array_equal(first[0], first[2])


def test_a_bad_dim_is_rejected() -> None:
    with pytest.raises(ValueError, match="dim"):
        HashingEmbedder(dim=0)


def test_the_support_group_turn_ranks_first_for_its_question(locomo_path: Path) -> None:
    sample = json.loads(locomo_path.read_text())[0]
    turns = [
        t for k, v in sample["conversation"].items() if k.startswith("session_") and isinstance(v, list) for t in v
    ]
    question = "When did Caroline go to the LGBTQ support group?"
    ids = [t["dia_id"] for t in turns]
    assert evidence_ranks(HashingEmbedder(), ids, [turn_text(t) for t in turns], [(question, {"D1:3"})]) == [0]


def test_locomo_retrieval_quality(locomo_path: Path) -> None:
    """Measured 0.425 hit@5 (docs/backends.md); the old random projection to 384 dims had 0.196."""
    figures = evaluate_locomo(locomo_path, HashingEmbedder)
    print(figures)
    assert figures["questions"] > 1000
    assert figures["hit@5"] > 0.38 and figures["hit@10"] > 0.45 and figures["mrr"] > 0.28


def test_conversations_and_questions_are_read(locomo_path: Path) -> None:
    conversations = list(locomo_conversations(locomo_path))
    assert len(conversations) == 7
    assert sum(len(ids) for ids, _, _ in conversations) == 4124
